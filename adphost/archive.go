package adphost

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/archive"
	"github.com/agentprotocols/go-sdk/identity"
)

// builtArchive is a room's archive manifest (§19), made once when first
// asked for after the room ended: ended rooms accept no writes, so it
// never changes. The records and the transcript are not kept: each
// request streams them from the Store a page at a time, so that an
// archive costs the host memory in proportion to the page budget, not to
// the room's size.
type builtArchive struct {
	m        *archive.Manifest
	manifest []byte
}

// archiveOf returns the room's archive, making its manifest on first
// use. Only ended rooms have one; a cancelled room has none (§19).
func (h *Host) archiveOf(r *http.Request, hr *hostRoom) (*builtArchive, error) {
	hr.mu.Lock()
	defer hr.mu.Unlock()
	if hr.archive != nil {
		return hr.archive, nil
	}
	switch st := hr.room.Status(h.now()); {
	case st == adp.StatusEnded:
	case h.laterDraft():
		// 2026-09-24 §15: not_found before the archive exists.
		return nil, identity.Errorf(identity.CodeNotFound, "the room is %s; it has no archive", st)
	case st == adp.StatusCancelled:
		return nil, identity.NewError(adp.CodeRoomNotActive, "a cancelled room has no archive")
	default:
		return nil, identity.NewError(adp.CodeRoomNotActive, "the room has not ended; its archive does not exist yet")
	}
	opts, err := h.archiveOptions(hr.id, hr.room)
	if err != nil {
		return nil, err
	}
	w := archive.NewWriter(io.Discard, nil, opts)
	if err := h.eachRecord(r.Context(), hr.id, hr.room.Latest().Seq, w.Add); err != nil {
		return nil, err
	}
	m, err := w.Close()
	if err != nil {
		return nil, err
	}
	mb, err := m.MarshalJSON()
	if err != nil {
		return nil, err
	}
	hr.archive = &builtArchive{m: m, manifest: mb}
	return hr.archive, nil
}

// archiveOptions are the archive options of a room of this host. In the
// 2026-09-24 draft the manifest commits to the external packs the room
// imported (§18): one packs entry per document of its registry, served
// byte for byte at archive.PackURL (getArchivePack).
func (h *Host) archiveOptions(roomID string, room *adp.Room) (*archive.Options, error) {
	url := h.RoomURL(roomID)
	o := &archive.Options{
		Draft: h.draft, Host: h.origin.Host(), URL: url, Now: h.now,
		Formats: map[string]string{"jsonl": url + "/archive.jsonl", "markdown": url + "/archive.md"},
	}
	if !h.laterDraft() {
		return o, nil
	}
	o.Host = "" // the 2026-09-24 manifest has none: room.create names the host (§18)
	for _, doc := range room.Registry().Documents() {
		name, err := archive.PackFileName(doc.Digest)
		if err != nil {
			return nil, err
		}
		o.Packs = append(o.Packs, archive.ArchivedPack{Pack: doc.Pack, Digest: doc.Digest, URL: archive.PackURL(url, name)})
	}
	return o, nil
}

// eachRecord calls f with the room's records from seq 1 to last, in
// order, reading them a page (the page budget) at a time.
func (h *Host) eachRecord(ctx context.Context, roomID string, last int64, f func(*adp.Record) error) error {
	for after := int64(0); after < last; {
		recs, err := h.store.Records(ctx, roomID, after, int(min(last-after, MaxEventsLimit)), h.pageBytes)
		if err != nil {
			return err
		}
		if len(recs) == 0 {
			return errors.New("adphost: the Store lost records of an ended room")
		}
		for _, rec := range recs {
			if err := f(rec); err != nil {
				return err
			}
			after = rec.Seq
		}
	}
	return nil
}

// archiveFor authorizes and returns the archive of the request's room.
func (h *Host) archiveFor(w http.ResponseWriter, r *http.Request) (*hostRoom, *builtArchive) {
	hr, _, err := h.authorizedRoom(r, readContents)
	var a *builtArchive
	if err == nil {
		a, err = h.archiveOf(r, hr)
	}
	if err != nil {
		writeError(w, err)
		return nil, nil
	}
	return hr, a
}

// streamArchive writes the records of a's room to w, through f, after
// the answer's headers. A Store that fails midway aborts the answer: a
// client sees a truncated body (which does not verify against the
// manifest), never a short archive that looks whole.
func (h *Host) streamArchive(w http.ResponseWriter, r *http.Request, hr *hostRoom, a *builtArchive, contentType string, f func(*adp.Record) error) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(http.StatusOK)
	err := h.eachRecord(r.Context(), hr.id, a.m.LastSeq, f)
	if err != nil && r.Context().Err() == nil && !errors.Is(err, errWrite) {
		h.log.Error("adphost: an archive could not be read to its end", "room", hr.id, "err", err)
		panic(http.ErrAbortHandler)
	}
}

// errWrite marks a failed write to the client, which ends a stream
// without more ado.
var errWrite = errors.New("adphost: the client stopped reading")

// getArchive is GET /v1/rooms/{room_id}/archive: the manifest (§19),
// whose formats name the two paths below.
func (h *Host) getArchive(w http.ResponseWriter, r *http.Request) {
	if _, a := h.archiveFor(w, r); a != nil {
		writeRaw(w, http.StatusOK, a.manifest)
	}
}

// getArchiveJSONL serves the records, one canonical JSON record per line.
func (h *Host) getArchiveJSONL(w http.ResponseWriter, r *http.Request) {
	hr, a := h.archiveFor(w, r)
	if a == nil {
		return
	}
	var line []byte
	h.streamArchive(w, r, hr, a, "application/jsonl", func(rec *adp.Record) error {
		line = append(rec.AppendJSON(line[:0]), '\n')
		if _, err := w.Write(line); err != nil {
			return errWrite
		}
		return nil
	})
}

// getArchiveMarkdown serves the Markdown transcript.
func (h *Host) getArchiveMarkdown(w http.ResponseWriter, r *http.Request) {
	hr, a := h.archiveFor(w, r)
	if a == nil {
		return
	}
	t := archive.NewTranscript(w)
	h.streamArchive(w, r, hr, a, "text/markdown; charset=utf-8", func(rec *adp.Record) error {
		if t.Add(rec) != nil {
			return errWrite
		}
		return nil
	})
	t.Close(a.m)
}

// getArchivePack is GET /v1/rooms/{room_id}/archive/packs/{name} in the
// 2026-09-24 draft: the exact bytes of an external pack document the room
// imported, the url of its entry in the manifest's packs (§18), under the
// archive's read rules. name is the document's archive.PackFileName.
func (h *Host) getArchivePack(w http.ResponseWriter, r *http.Request) {
	hr, a := h.archiveFor(w, r)
	if a == nil {
		return
	}
	name := r.PathValue("name")
	for _, doc := range hr.current().Registry().Documents() {
		if n, err := archive.PackFileName(doc.Digest); err == nil && n == name {
			writeRaw(w, http.StatusOK, doc.Raw)
			return
		}
	}
	writeError(w, identity.Errorf(identity.CodeNotFound, "the archive has no pack document %.80q", name))
}
