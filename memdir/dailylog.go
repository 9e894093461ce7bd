package memdir

import (
	"fmt"
	"path/filepath"
	"time"
)

// logsDirName holds the daily logs inside an auto-memory dir.
const logsDirName = "logs"

// DailyLogPath returns the append-only log for the day of t, in t's own
// location (pass a local time for the user's local date):
// <autoMemDir>/logs/YYYY/MM/YYYY-MM-DD.md.
func DailyLogPath(autoMemDir string, t time.Time) string {
	y, m, d := t.Date()
	return filepath.Join(autoMemDir, logsDirName,
		fmt.Sprintf("%04d", y), fmt.Sprintf("%02d", int(m)),
		fmt.Sprintf("%04d-%02d-%02d.md", y, int(m), d))
}

// dailyLogPattern is how prompts describe the log path: a pattern, not
// today's date, so a cached prompt stays valid across midnight.
func dailyLogPattern(autoMemDir string) string {
	return filepath.Join(autoMemDir, logsDirName, "YYYY", "MM", "YYYY-MM-DD.md")
}
