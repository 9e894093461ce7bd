//go:build unix

package filelock

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"
)

const osLockSupported = true

// flockWait takes an exclusive flock on fd, polling without blocking so a
// context can end the wait.
func flockWait(ctx context.Context, fd uintptr) error {
	delay := 200 * time.Microsecond
	for {
		err := syscall.Flock(int(fd), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			return fmt.Errorf("filelock: flock: %w", err)
		}
		if err := sleep(ctx, delay); err != nil {
			return err
		}
		delay = min(delay*2, 10*time.Millisecond)
	}
}
