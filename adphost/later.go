package adphost

import (
	"net/http"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/identity"
)

// The HTTP shapes of the 2026-09-24 draft where they differ from the
// seed's (§15–§17): the discovery document in the Agent Identity shape,
// accepted_at in place of received_at, Identity lists, and the stored
// status itself as the answer to a status read or write. The handlers
// are the seed's; they pick the shape by the host's draft.

// laterDiscovery is the 2026-09-24 discovery document (§15.1): an Agent
// Identity discovery document whose service is the origin room.create
// names, with the rooms and my_rooms endpoints, and ADP's
// registered_packs. The host resolves no Agent Profiles, so it has no
// profile member, and it serves no redacted records, so it does not
// list the redaction feature. Its "quotas" member publishes the quota
// policy (§20), as the seed document does.
type laterDiscovery struct {
	Protocol        string            `json:"protocol"`
	Service         identity.Origin   `json:"service"`
	Endpoints       map[string]string `json:"endpoints"`
	Features        []string          `json:"features"`
	RegisteredPacks []string          `json:"registered_packs"`
	Quotas          QuotaPolicy       `json:"quotas"`
}

// The feature strings of the 2026-09-24 discovery document (§15.1) the
// seed's list does not have.
const (
	featurePublicDiscovery = "public-discovery"
	featureMarkdownArchive = "markdown-archive"
)

func (h *Host) laterDiscovery(w http.ResponseWriter) {
	features := []string{
		adp.FeatureRestricted, adp.FeaturePrivate, featurePublicDiscovery, adp.FeatureAgentStatus,
		featureMarkdownArchive, adp.FeatureRegistered,
	}
	if h.roomOpts.Packs != nil && h.roomOpts.Packs.Fetcher != nil {
		features = append(features, adp.FeatureExternal)
	}
	writeJSON(w, http.StatusOK, laterDiscovery{
		Protocol: adp.Protocol, Service: h.origin,
		Endpoints:       map[string]string{"rooms": h.API() + "/rooms", "my_rooms": h.API() + "/me/rooms"},
		Features:        features,
		RegisteredPacks: h.draft.RegisteredPackIDs(),
		Quotas:          h.Quotas(),
	})
}

// laterRoomResource is the room resource of the 2026-09-24 draft (§15):
// the seed's members with accepted_at in place of received_at.
type laterRoomResource struct {
	*adp.RoomResource
	// ReceivedAt hides the seed resource's member (always omitted).
	ReceivedAt struct{} `json:"received_at,omitzero"`
	AcceptedAt int64    `json:"accepted_at"`
}

// laterCreateResponse is the answer to room.create in the 2026-09-24
// draft: the seed's members with accepted_at in place of received_at.
type laterCreateResponse struct {
	*adp.CreateResponse
	ReceivedAt struct{} `json:"received_at,omitzero"`
	AcceptedAt int64    `json:"accepted_at"`
}

// roomView is a room resource in the host's draft's shape.
func (h *Host) roomView(res *adp.RoomResource) any {
	if h.laterDraft() {
		return laterRoomResource{RoomResource: res, AcceptedAt: res.ReceivedAt}
	}
	return res
}

// createView is a room.create answer in the host's draft's shape.
func (h *Host) createView(res *adp.CreateResponse) any {
	if h.laterDraft() {
		return laterCreateResponse{CreateResponse: res, AcceptedAt: res.ReceivedAt}
	}
	return res
}

// statusListView is a room's statuses in the host's draft's shape: an
// Identity list in the 2026-09-24 draft (§16.4).
func (h *Host) statusListView(list []adp.AgentStatus) any {
	if h.laterDraft() {
		return identity.List[adp.AgentStatus]{Result: list}
	}
	return adp.AgentStatusList{Statuses: list}
}

// statusView is one status in the host's draft's shape: the stored status
// object itself in the 2026-09-24 draft (§16.4).
func (h *Host) statusView(st adp.AgentStatus) any {
	if h.laterDraft() {
		return st
	}
	return adp.AgentStatusResponse{Status: st}
}

// laterRooms is GET /v1/rooms in the 2026-09-24 draft (§17): the seed's
// filters, order and paging over public and restricted rooms, each
// listed as its room resource (§15). The page is chosen from the Store's
// index; only its rooms are loaded, for their resources.
func (h *Host) laterRooms(w http.ResponseWriter, r *http.Request) {
	list, err := h.discoverable(r)
	if err == nil {
		sortSummaries(list)
	}
	var out identity.List[adp.RoomSummary]
	if err == nil {
		out, err = h.page(r, list)
	}
	res := make([]any, 0, len(out.Result))
	for _, s := range out.Result {
		if err != nil {
			break
		}
		var hr *hostRoom
		if hr, err = h.lookup(r.Context(), s.ID); err == nil {
			rr := h.resource(hr.current())
			res = append(res, h.roomView(&rr))
		}
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, identity.List[any]{Result: res, NextCursor: out.NextCursor})
}
