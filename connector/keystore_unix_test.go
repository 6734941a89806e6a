//go:build unix

package connector

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestPassphraseFD reads the key file passphrase from an inherited file
// descriptor, as an operator's launcher would pass it.
func TestPassphraseFD(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.age")
	t.Setenv("TEST_PASS", "correct horse")
	id, err := GenerateKeyFile(path, PassphraseEnv("TEST_PASS"), &KeyFileOptions{WorkFactor: 10})
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	w.WriteString("correct horse\n")
	w.Close()
	// PassphraseFD owns (and closes) its descriptor: hand it a duplicate,
	// so r's own close cannot hit a descriptor number reused meanwhile.
	fd, err := syscall.Dup(int(r.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	k, err := LoadKeyFile(path, PassphraseFD(uintptr(fd)))
	if err != nil || k.AgentID() != id {
		t.Fatalf("fd passphrase: %v", err)
	}
}
