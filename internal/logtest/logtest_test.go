package logtest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentprotocols/go-sdk/internal/logtest"
)

func TestRecorder(t *testing.T) {
	log, rec := logtest.New()
	log.Info("other")
	log.With("room", "r1").Error("store failed", "err", errors.New("disk full"), "seq", 7)
	r, ok := rec.Find("store failed")
	if !ok {
		t.Fatal("record not captured")
	}
	if r.Level() != "ERROR" || r.String("room") != "r1" || r.String("err") != "disk full" || r.String("seq") != "7" {
		t.Fatalf("captured %v", r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go log.Warn("later")
	if _, ok := rec.Await(ctx, "later"); !ok {
		t.Fatal("Await missed a record")
	}
	cancel()
	if _, ok := rec.Await(ctx, "absent"); ok {
		t.Fatal("Await found an absent record")
	}
	if _, ok := rec.Find("absent"); ok || len(rec.Records()) != 3 {
		t.Fatalf("records %v", rec.Records())
	}
}
