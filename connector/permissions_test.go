package connector

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestPermissionsChecked (connector §6): a group/world-writable state directory and
// key file, and a group/world-readable unencrypted key, are refused.
func TestPermissionsChecked(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("modes do not describe access on Windows")
	}
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctxT(t), &Options{Dir: dir, Key: testKey(t, "alice")}); !errors.Is(err, ErrInsecurePermissions) {
		t.Fatalf("state dir 0777: %v", err)
	}
	key := filepath.Join(t.TempDir(), "key")
	if _, err := GenerateKeyFileUnencryptedDev(key); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKeyFileUnencryptedDev(key); err != nil {
		t.Fatal(err)
	}
	os.Chmod(key, 0o644)
	if _, err := LoadKeyFileUnencryptedDev(key); !errors.Is(err, ErrInsecurePermissions) {
		t.Fatalf("dev key 0644: %v", err)
	}
	os.Chmod(key, 0o622)
	if _, err := LoadKeyFile(key, func() ([]byte, error) { return []byte("x"), nil }); !errors.Is(err, ErrInsecurePermissions) {
		t.Fatalf("key 0622: %v", err)
	}
}
