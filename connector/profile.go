package connector

import (
	"context"
	"fmt"
	"slices"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/internal/strictjson"
	"github.com/agentprotocols/go-sdk/profile"
)

// profileService returns the profile client of an operator-configured
// profile service (Options.Profiles or a host's ProfileService).
func (e *Engine) profileService(name string) (*profile.Client, error) {
	allowed := slices.Contains(e.opts.Profiles, name)
	for _, h := range e.hosts {
		allowed = allowed || (h.client != nil && h.cfg.ProfileService == name)
	}
	if !allowed || name == "" {
		return nil, fmt.Errorf("%w: profile service %q", ErrHostNotAllowed, clip(name))
	}
	return profile.NewClient(name, &profile.ClientOptions{HTTPClient: e.opts.HTTPClient, AllowLoopbackHTTP: e.opts.AllowLoopbackHTTP})
}

// ProfileUpdate is agent_protocols_profile_update: payload.id is the
// active Agent ID (a different id is refused); the update is signed,
// recorded in the outbox with its nonce, and published.
func (e *Engine) ProfileUpdate(ctx context.Context, in ProfileUpdateInput) (*ProfileUpdateResult, error) {
	c, err := e.profileService(in.ProfileService)
	if err != nil {
		return nil, err
	}
	var obj map[string]jsontext.Value
	if err := strictjson.Unmarshal(in.Profile, &obj); err != nil {
		return nil, fmt.Errorf("%w: profile must be a JSON object: %v", ErrInvalidInput, err)
	}
	if id, ok := obj["id"]; ok {
		var s string
		if json.Unmarshal(id, &s) != nil || s != e.agent.String() {
			return nil, fmt.Errorf("%w: profile id must be the active Agent ID", ErrInvalidInput)
		}
	} else {
		obj["id"], _ = json.Marshal(e.agent.String())
	}
	b, err := json.Marshal(obj, json.Deterministic(true))
	if err != nil {
		return nil, err
	}
	p, err := profile.ParsePayload(b, e.agent, nil)
	if err != nil {
		return nil, err
	}
	if !e.limiter.allow() {
		return nil, ErrRateLimited
	}
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	env, err := profile.NewUpdate(ctx, e.author, *p, nil)
	if err != nil {
		return nil, err
	}
	id, err := e.recordOutbox(env, &outboxEntry{Host: in.ProfileService, Profile: true, Envelope: env.AppendJSON(nil)})
	if err != nil {
		return nil, err
	}
	v, err := c.Publish(ctx, env)
	if err != nil {
		return nil, e.submitFailed(in.ProfileService, id, err)
	}
	if err := e.dropOutbox(id); err != nil {
		return nil, err
	}
	doc, err := json.Marshal(v.Document)
	if err != nil {
		return nil, err
	}
	return &ProfileUpdateResult{Profile: doc, Envelope: env.AppendJSON(nil)}, nil
}
