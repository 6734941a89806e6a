package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestConfigPermissions: a config (the host allowlist) that group or
// others may write is refused.
func TestConfigPermissions(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("modes do not describe access on Windows")
	}
	cfg := filepath.Join(t.TempDir(), "connector.json")
	if err := os.WriteFile(cfg, []byte(`{"hosts":[{"host":"https://api.example"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chmod(cfg, 0o666)
	if _, err := loadConfig(cfg, false); err == nil || !strings.Contains(err.Error(), "permissions") {
		t.Fatalf("config 0666: %v", err)
	}
}
