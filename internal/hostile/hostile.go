// Package hostile loads the tables of hostile inputs under testdata/hostile
// that several packages' tests share.
package hostile

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// Key is one hostile team-memory key and the reason it must be refused
// (a short name such as "escapes" or "unicode").
type Key struct {
	Reason string
	Key    string
}

// Keys reads testdata/hostile/keys.txt from the module root.
func Keys() ([]Key, error) {
	_, file, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(file), "..", "..", "testdata", "hostile", "keys.txt")
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Key
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.SplitN(line, "\t", 3)
		if len(fields) < 2 {
			return nil, fmt.Errorf("%s:%d: want reason<TAB>quoted key", path, n)
		}
		key, err := strconv.Unquote(fields[1])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, n, err)
		}
		out = append(out, Key{Reason: fields[0], Key: key})
	}
	return out, sc.Err()
}
