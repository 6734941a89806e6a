package adphost

import (
	"bytes"
	"net/http"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/archive"
	"github.com/agentprotocols/go-sdk/identity"
)

// builtArchive is a room's archive (§19), built once when first asked for
// after the room ended: ended rooms accept no writes, so it never changes.
type builtArchive struct {
	manifest []byte
	jsonl    []byte
	markdown []byte
}

// archiveOf returns the room's archive, building it on first use. Only
// ended rooms have one; a cancelled room has none (§19).
func (h *Host) archiveOf(r *http.Request, hr *hostRoom) (*builtArchive, error) {
	hr.mu.Lock()
	defer hr.mu.Unlock()
	if hr.archive != nil {
		return hr.archive, nil
	}
	switch hr.room.Status(h.now()) {
	case adp.StatusEnded:
	case adp.StatusCancelled:
		return nil, identity.NewError(adp.CodeRoomNotActive, "a cancelled room has no archive")
	default:
		return nil, identity.NewError(adp.CodeRoomNotActive, "the room has not ended; its archive does not exist yet")
	}
	url := h.RoomURL(hr.id)
	var jsonl, md bytes.Buffer
	w := archive.NewWriter(&jsonl, &md, &archive.Options{
		Host: h.origin.Host(), URL: url, Now: h.now,
		Formats: map[string]string{"jsonl": url + "/archive.jsonl", "markdown": url + "/archive.md"},
	})
	var after int64
	for {
		recs, err := h.store.Records(r.Context(), hr.id, after, 1000, h.pageBytes)
		if err != nil {
			return nil, err
		}
		if len(recs) == 0 {
			break
		}
		for _, rec := range recs {
			if err := w.Add(rec); err != nil {
				return nil, err
			}
			after = rec.Seq
		}
	}
	m, err := w.Close()
	if err != nil {
		return nil, err
	}
	mb, err := m.MarshalJSON()
	if err != nil {
		return nil, err
	}
	hr.archive = &builtArchive{manifest: mb, jsonl: jsonl.Bytes(), markdown: md.Bytes()}
	return hr.archive, nil
}

// archiveFor authorizes and returns the archive of the request's room.
func (h *Host) archiveFor(w http.ResponseWriter, r *http.Request) *builtArchive {
	hr, _, err := h.authorizedRoom(r, readContents)
	var a *builtArchive
	if err == nil {
		a, err = h.archiveOf(r, hr)
	}
	if err != nil {
		writeError(w, err)
		return nil
	}
	return a
}

// getArchive is GET /v1/rooms/{room_id}/archive: the manifest (§19),
// whose formats name the two paths below.
func (h *Host) getArchive(w http.ResponseWriter, r *http.Request) {
	if a := h.archiveFor(w, r); a != nil {
		writeRaw(w, http.StatusOK, a.manifest)
	}
}

// getArchiveJSONL serves the records, one canonical JSON record per line.
func (h *Host) getArchiveJSONL(w http.ResponseWriter, r *http.Request) {
	if a := h.archiveFor(w, r); a != nil {
		w.Header().Set("Content-Type", "application/jsonl")
		w.WriteHeader(http.StatusOK)
		w.Write(a.jsonl)
	}
}

// getArchiveMarkdown serves the Markdown transcript.
func (h *Host) getArchiveMarkdown(w http.ResponseWriter, r *http.Request) {
	if a := h.archiveFor(w, r); a != nil {
		w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		w.Write(a.markdown)
	}
}
