// Package bench holds benchmarks that compare agentmem with peers outside
// the core module (filepath-securejoin for the team path validator), so
// the core module does not depend on them.
package bench
