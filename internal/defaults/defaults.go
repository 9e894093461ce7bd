// Package defaults fills the options a caller left unset: a count, size,
// duration or weight of zero (or below) means the documented default, a
// nil logger one that discards.
package defaults

import "log/slog"

// IfUnset sets *v to def when *v is zero or negative.
func IfUnset[T ~int | ~int64 | ~float64](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// Logger returns l, or a logger that discards every record when l is nil.
func Logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}
