//go:build !unix

package filelock

import "context"

const osLockSupported = false

func flockWait(context.Context, uintptr) error { return nil }
