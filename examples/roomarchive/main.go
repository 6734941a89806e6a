// Command roomarchive replays a room from the SDK's seed-draft vectors
// (adp/testdata/vectors.json, the "main" room, which ends with room.close)
// through adp.Room and writes its archive, ready for cmd/adpverify:
//
//	go run ./examples/roomarchive /tmp/room
//	go run ./cmd/adpverify archive /tmp/room/manifest.json /tmp/room/records.jsonl
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/archive"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: roomarchive <output-dir>")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "roomarchive:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	raw, err := os.ReadFile(filepath.Join("adp", "testdata", "vectors.json"))
	if err != nil {
		return fmt.Errorf("%w (run from the module root)", err)
	}
	var vf struct {
		Rooms []struct {
			Name    string `json:"name"`
			RoomID  string `json:"room_id"`
			Records []struct {
				Record jsontext.Value `json:"record"`
			} `json:"records"`
		} `json:"rooms"`
	}
	if err := json.Unmarshal(raw, &vf); err != nil {
		return err
	}
	for _, vr := range vf.Rooms {
		if vr.Name != "main" {
			continue
		}
		// Replay the records as a verifier would before archiving them: an
		// archive of a history the room rules refuse is worth nothing.
		ctx := context.Background()
		room := adp.NewRoom(vr.RoomID, nil)
		var recs []*adp.Record
		for _, v := range vr.Records {
			rec, err := adp.ParseRecord(v.Record)
			if err != nil {
				return err
			}
			if err := room.Apply(ctx, rec); err != nil {
				return fmt.Errorf("seq %d: %w", rec.Seq, err)
			}
			recs = append(recs, rec)
		}
		last := recs[len(recs)-1]
		m, err := archive.WriteDir(dir, recs, room.Registry().Documents(), &archive.Options{
			Host: "api.example.com",
			URL:  "https://api.example.com/v1/rooms/" + vr.RoomID,
			Now:  func() time.Time { return time.UnixMilli(last.ReceivedAt + 1000) },
		})
		if err != nil {
			return err
		}
		fmt.Printf("archived room %s: %d records, status %s, events_sha3_256 %s\n",
			m.RoomID, m.EventCount, room.Status(time.UnixMilli(last.ReceivedAt)), m.EventsSHA3256)
		fmt.Printf("verify with: go run ./cmd/adpverify archive %s %s\n",
			filepath.Join(dir, archive.ManifestFile), filepath.Join(dir, archive.RecordsFile))
		return nil
	}
	return fmt.Errorf("no main room in the vectors")
}
