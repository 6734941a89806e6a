package pgtest

import (
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// TestDatabase connects to a fresh database and checks that commits are
// durable (the benchmarks rely on it).
func TestDatabase(t *testing.T) {
	u := Database(t)
	conn, err := pgx.Connect(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	for _, setting := range []string{"fsync", "synchronous_commit"} {
		var v string
		if err := conn.QueryRow(t.Context(), "SHOW "+setting).Scan(&v); err != nil {
			t.Fatal(err)
		}
		if v != "on" {
			t.Errorf("%s = %s, want on", setting, v)
		}
	}
}

// TestCrashRestart: a cluster of the test's own crashes (connections
// fail) and restarts on the same URL with every committed row.
func TestCrashRestart(t *testing.T) {
	ctx := t.Context()
	c := Own(t)
	conn, err := pgx.Connect(ctx, c.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE t (v int); INSERT INTO t VALUES (7)"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	if err := c.Crash(); err != nil {
		t.Fatal(err)
	}
	if conn, err := pgx.Connect(ctx, c.URL); err == nil {
		conn.Close(ctx)
		t.Fatal("connected to a crashed server")
	}
	if err := c.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	conn, err = pgx.Connect(ctx, c.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var v int
	if err := conn.QueryRow(ctx, "SELECT v FROM t").Scan(&v); err != nil || v != 7 {
		t.Fatalf("after the restart: %d, %v", v, err)
	}
}
