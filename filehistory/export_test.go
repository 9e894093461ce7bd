package filehistory

// The journal's wire format and file names, for the black-box tests.
var (
	EncodeEntry = encodeEntry
	DecodeEntry = decodeEntry
	BackupName  = backupName
	BackupDir   = backupDir
)

const JournalName = journalName

// Forget lets the external tests drop what is remembered of path.
func (r *ReadState) Forget(path string) { r.forget(path) }
