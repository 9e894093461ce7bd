package filehistory

// The journal's wire format and file names, for the black-box tests.
var (
	EncodeEntry = encodeEntry
	DecodeEntry = decodeEntry
	BackupName  = backupName
	BackupDir   = backupDir
)

const JournalName = journalName
