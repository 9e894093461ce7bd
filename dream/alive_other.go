//go:build !unix

package dream

import "os"

// processAlive reports whether pid names a running process, as far as the
// platform can tell.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	_, err := os.FindProcess(pid)
	return err == nil
}
