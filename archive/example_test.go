package archive_test

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/archive"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
)

// A host archives a room; anyone verifies the archive offline.
func Example() {
	ctx := context.Background()
	now := time.UnixMilli(1779753600000)
	clock := func() time.Time { return now }
	key, err := identity.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		log.Fatal(err)
	}
	author := &envelope.Author{Signer: key, Nonces: identity.NewNonceSource(nil), Now: clock}

	// The host side: accept a few writes.
	room := adp.NewRoom("d8ftedhpqhsusbg001tg", nil)
	var records []*adp.Record
	accept := func(env *envelope.Envelope, err error) {
		if err != nil {
			log.Fatal(err)
		}
		now = now.Add(time.Millisecond)
		rec, err := room.Accept(ctx, env, now)
		if err != nil {
			log.Fatal(err)
		}
		records = append(records, rec)
	}
	head := func() adp.Base {
		b, err := room.BaseFor(adp.TypeMessageCreate)
		if err != nil {
			log.Fatal(err)
		}
		return b
	}
	accept(adp.NewRoomCreate(ctx, author, adp.RoomCreate{
		Topic: "Release review", Visibility: adp.VisibilityPublic,
		StartTime: now.UnixMilli(), EndTime: now.Add(time.Hour).UnixMilli(),
	}))
	accept(adp.NewMessage(ctx, author, head(), adp.Message{ContentType: "text/plain", Content: adp.TextContent("Ship it.")}))
	accept(adp.NewClose(ctx, author, head(), adp.Notice{}))

	// Write the archive: the JSONL log, a transcript, the manifest.
	var events, transcript bytes.Buffer
	w := archive.NewWriter(&events, &transcript, &archive.Options{Host: "al.ink", Now: clock})
	for _, rec := range records {
		if err := w.Add(rec); err != nil {
			log.Fatal(err)
		}
	}
	manifest, err := w.Close()
	if err != nil {
		log.Fatal(err)
	}

	// Anyone: verify it offline.
	report, err := archive.Verify(ctx, manifest, &events, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("valid:", report.Valid)
	fmt.Println("records:", report.Records, "status:", report.Status)
	fmt.Println("digest matches:", report.EventsSHA3256 == manifest.EventsSHA3256)
	// Output:
	// valid: true
	// records: 3 status: ended
	// digest matches: true
}
