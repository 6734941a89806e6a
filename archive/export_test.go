package archive

// SetMemEntries makes the in-memory part of the pending-record store
// hold n entries, so that tests reach the sorted runs on disk with small
// archives; it returns the function that restores the default.
func SetMemEntries(n int) (restore func()) {
	old := memEntries
	memEntries = n
	return func() { memEntries = old }
}

// The transcript's Markdown escapers, for the external tests.
var (
	EscapeText  = escapeText
	CodeSpan    = codeSpan
	FencedBlock = fencedBlock
)
