package memdir

// Internal names the external tests (package memdir_test) check against.
const (
	ProvenanceStateDir = provenanceStateDir
	ProvenanceFileName = provenanceFileName
)
