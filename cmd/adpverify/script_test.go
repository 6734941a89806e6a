package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentprotocols/go-sdk/cmd/internal/clitest"
)

func TestMain(m *testing.M) {
	clitest.Main(m, map[string]func(){"adpverify": main})
}

// TestScripts runs testdata/*.txt: adpverify as a process on archives
// written here, its exit status and its output. $ARCHIVES holds valid/
// (the vectors' main room), tampered/ (a content byte of seq 6 changed),
// badmanifest/ (a manifest cut short), cannot/ (a schema this verifier
// cannot run), record.json (a records line) and envelope.json (its
// envelope).
func TestScripts(t *testing.T) {
	root := t.TempDir()
	valid, recs := mainRoom(t)
	copyDir(t, valid, filepath.Join(root, "valid"))
	copyDir(t, valid, filepath.Join(root, "tampered"))
	log := filepath.Join(root, "tampered", "records.jsonl")
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(b, []byte("\n"))
	lines[5] = bytes.Replace(lines[5], []byte(`"content":"`), []byte(`"content":"X`), 1)
	write(t, log, bytes.Join(lines, []byte("\n")))
	copyDir(t, valid, filepath.Join(root, "badmanifest"))
	write(t, filepath.Join(root, "badmanifest", "manifest.json"), []byte(`{"protocol":`))
	copyDir(t, cannotEvaluateDir(t), filepath.Join(root, "cannot"))
	write(t, filepath.Join(root, "record.json"), lines[2])
	write(t, filepath.Join(root, "envelope.json"), recs[2].Envelope.AppendJSON(nil))
	clitest.Run(t, &clitest.Params{Setup: func(env *testscript.Env) error {
		env.Setenv("ARCHIVES", root)
		return nil
	}})
}

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.CopyFS(to, os.DirFS(from)); err != nil {
		t.Fatal(err)
	}
}

// TestExitStatusesDocumented: the exit statuses the program returns are
// the ones go doc shows for it, and the ones its usage lists.
func TestExitStatusesDocumented(t *testing.T) {
	doc, err := exec.Command("go", "doc", ".").Output()
	if err != nil {
		t.Fatalf("go doc: %v", err)
	}
	want := map[int]string{
		exitValid:          "valid",
		exitInvalid:        "invalid",
		exitUsage:          "usage or I/O error",
		exitCannotEvaluate: "this verifier cannot evaluate the archive",
	}
	_, statuses, ok := strings.Cut(string(doc), "Exit status:\n")
	if !ok {
		t.Fatalf("go doc shows no exit statuses:\n%s", doc)
	}
	documented := regexp.MustCompile(`(?m)^\s+([0-9]+) (.+)$`).FindAllStringSubmatch(statuses, -1)
	var codes []string
	for _, m := range documented {
		codes = append(codes, m[1])
	}
	if strings.Join(codes, " ") != "0 1 2 3" {
		t.Fatalf("go doc lists the exit statuses %q, want 0 1 2 3", codes)
	}
	for code, meaning := range want {
		line := documented[code][2]
		if !strings.HasPrefix(line, meaning) {
			t.Errorf("go doc: exit status %d is %q, want %q", code, line, meaning)
		}
		if !strings.Contains(usage, strings.Fields(documented[code][0])[0]+" "+meaning) {
			t.Errorf("the usage does not list exit status %d as %q", code, meaning)
		}
	}
}
