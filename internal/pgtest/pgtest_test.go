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
