package packs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/sha3"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/agentprotocols/go-sdk/internal/b64url"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
	"github.com/go-json-experiment/json"
)

// Defaults for HTTPSFetcher. The seed text asks for a bound without naming
// one; 256 KiB is the later draft's recommendation and far above any
// registered pack (the five together are 36 KiB).
const (
	DefaultMaxPackBytes = 256 << 10
	DefaultFetchTimeout = 10 * time.Second
	maxRedirects        = 5
)

// Fetcher retrieves external pack documents (§13.5). It returns the raw
// bytes, which the caller verifies against digest; implementations may
// verify too. Errors should be pack_unavailable; the Registry re-labels
// any other error as pack_unavailable.
type Fetcher interface {
	Fetch(ctx context.Context, uri, digest string) ([]byte, error)
}

// PackDocument is an external pack document as a room imported it: the URI
// the declaration named, its digest and the exact bytes the digest covers.
// Archives include these so verification needs no network (§13.5, §19).
type PackDocument struct {
	Pack   string // the URI the declaration named
	Digest string // "<algorithm>:<base64url>" of Raw (sha256; sha3-256 in the 2026-09-24 draft)
	Raw    []byte // the document exactly as fetched
}

type packDocumentJSON struct {
	Pack     string `json:"pack"`
	Digest   string `json:"digest"`
	Document string `json:"document"` // base64url of Raw: raw bytes survive any JSON re-encoding
}

// MarshalJSON encodes {"pack","digest","document"} with document as
// unpadded base64url of Raw.
func (p PackDocument) MarshalJSON() ([]byte, error) {
	return json.Marshal(packDocumentJSON{p.Pack, p.Digest, b64url.Encode(p.Raw)}, json.Deterministic(true))
}

// UnmarshalJSON decodes strictly and checks the digest.
func (p *PackDocument) UnmarshalJSON(b []byte) error {
	var w packDocumentJSON
	if err := strictjson.Unmarshal(b, &w); err != nil {
		return err
	}
	raw, err := b64url.Decode(w.Document)
	if err != nil {
		return fmt.Errorf("pack document: %w", err)
	}
	if err := anyDigest(raw, w.Digest); err != nil {
		return err
	}
	*p = PackDocument{Pack: w.Pack, Digest: w.Digest, Raw: raw}
	return nil
}

// Digest returns "sha256:" and the unpadded base64url SHA-256 of raw, the
// form a pack import's digest takes.
func Digest(raw []byte) string {
	sum := sha256.Sum256(raw)
	return "sha256:" + b64url.Encode(sum[:])
}

// VerifyDigest checks raw against a "sha256:<base64url>" digest, the
// default draft's only form; see [Draft.VerifyDigest].
func VerifyDigest(raw []byte, digest string) error { return DefaultDraft.VerifyDigest(raw, digest) }

// VerifyDigest checks raw against a digest "<algorithm>:<base64url>" whose
// algorithm the draft admits: sha256 in the 2026-07-04 draft (§13.5),
// sha256 or sha3-256 in the 2026-09-24 draft (§12.5). Any other
// algorithm, a malformed digest or a mismatch is pack_unavailable: the
// host cannot verify the pack.
func (d Draft) VerifyDigest(raw []byte, digest string) error {
	alg, err := d.parseDigest(digest)
	if err != nil {
		return err
	}
	got := alg.sum(raw)
	if subtle.ConstantTimeCompare(got[:], alg.want[:]) != 1 {
		return packUnavailable("pack document does not match digest %s", clip(digest))
	}
	return nil
}

// DigestAlgorithms returns the pack digest algorithms the draft admits,
// as they prefix a digest: "sha256", and in the 2026-09-24 draft
// "sha3-256" too.
func (d Draft) DigestAlgorithms() []string { return slices.Clone(d.rules().digests) }

// parsedDigest is a digest's algorithm and value.
type parsedDigest struct {
	sha3 bool // sha3-256, else sha256
	want [32]byte
}

func (p parsedDigest) sum(raw []byte) [32]byte {
	if p.sha3 {
		return sha3.Sum256(raw)
	}
	return sha256.Sum256(raw)
}

// parseDigest splits a digest whose algorithm the draft admits.
func (d Draft) parseDigest(digest string) (parsedDigest, error) {
	var p parsedDigest
	alg, rest, ok := strings.Cut(digest, ":")
	if !ok || !slices.Contains(d.rules().digests, alg) {
		return p, packUnavailable("digest %q: the %s draft admits only %s:<base64url>", clip(digest), d, strings.Join(d.rules().digests, "|"))
	}
	p.sha3 = alg == "sha3-256"
	if err := b64url.DecodeFixed(p.want[:], rest); err != nil {
		return p, packUnavailable("digest %q: %v", clip(digest), err)
	}
	return p, nil
}

// HTTPSFetcher fetches pack documents over HTTPS only, following at most
// five redirects that stay HTTPS, reading at most MaxBytes within Timeout,
// and verifying the digest. It is safe for concurrent use.
//
// It applies no address policy of its own: a host that must not reach
// internal networks (SSRF) supplies a Client whose Transport dials only
// permitted addresses.
type HTTPSFetcher struct {
	Draft    Draft         // whose digest algorithms it admits; zero: the default draft
	Client   *http.Client  // nil: http.DefaultClient's transport
	MaxBytes int64         // 0: DefaultMaxPackBytes
	Timeout  time.Duration // 0: DefaultFetchTimeout
}

// Fetch implements Fetcher. Every failure is pack_unavailable.
func (f *HTTPSFetcher) Fetch(ctx context.Context, uri, digest string) ([]byte, error) {
	if _, err := f.Draft.parseDigest(digest); err != nil {
		return nil, err
	}
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
		return nil, packUnavailable("pack %q is not an https URL", clip(uri))
	}
	u.Fragment, u.RawFragment = "", ""
	max, timeout := f.MaxBytes, f.Timeout
	if max <= 0 {
		max = DefaultMaxPackBytes
	}
	if timeout <= 0 {
		timeout = DefaultFetchTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	var c http.Client
	if f.Client != nil {
		c = *f.Client // copy: do not change the caller's redirect policy
	}
	next := c.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if req.URL.Scheme != "https" {
			return errors.New("redirect leaves https")
		}
		if len(via) >= maxRedirects {
			return errors.New("too many redirects")
		}
		if next != nil {
			return next(req, via)
		}
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, packUnavailable("pack %q: %v", clip(uri), err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return nil, packUnavailable("fetching pack %q: %v", clip(uri), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, packUnavailable("fetching pack %q: HTTP %d", clip(uri), resp.StatusCode)
	}
	if resp.ContentLength > max {
		return nil, packUnavailable("pack %q is %d bytes, more than %d", clip(uri), resp.ContentLength, max)
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, packUnavailable("fetching pack %q: %v", clip(uri), err)
	}
	if int64(len(raw)) > max {
		return nil, packUnavailable("pack %q is more than %d bytes", clip(uri), max)
	}
	if err := f.Draft.VerifyDigest(raw, digest); err != nil {
		return nil, err
	}
	return raw, nil
}

// anyDigest verifies raw against a digest of any algorithm some draft
// admits. A registry admits a digest by its own draft before it fetches or
// restores a document, so the places that only compare a document with
// the digest it is stored under need not know the draft.
func anyDigest(raw []byte, digest string) error {
	if strings.HasPrefix(digest, "sha3-256:") {
		return Draft20260924.VerifyDigest(raw, digest)
	}
	return Draft20260704.VerifyDigest(raw, digest)
}

// StaticFetcher serves pack documents from a fixed set, such as the ones an
// archive carries, and never touches the network. A document is served
// when its digest matches the request: the digest pins the content, so the
// URI an import names need not be the one the document was stored under.
type StaticFetcher []PackDocument

// Fetch implements Fetcher.
func (s StaticFetcher) Fetch(_ context.Context, uri, digest string) ([]byte, error) {
	for _, d := range s {
		if d.Digest == digest {
			if err := anyDigest(d.Raw, digest); err != nil {
				return nil, err
			}
			return bytes.Clone(d.Raw), nil
		}
	}
	return nil, packUnavailable("pack %q with digest %s is not available", clip(uri), clip(digest))
}
