package connector

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"filippo.io/age"

	"github.com/agentprotocols/go-sdk/identity"
)

// Key is the agent's signing key as loaded from the key store. It is
// opaque: the engine signs envelopes and request JWTs with it, and nothing
// outside the package can sign with it or read the seed (§4.1, §6).
type Key struct {
	k *identity.PrivateKey
}

// AgentID returns the key's Agent ID.
func (k *Key) AgentID() identity.AgentID { return k.k.AgentID() }

// String never prints the key.
func (k *Key) String() string { return "connector.Key(" + k.k.AgentID().String() + ")" }

// Passphrase returns the key file passphrase. It is never read from the
// MCP stdio channel: use PassphraseEnv or PassphraseFD.
type Passphrase func() ([]byte, error)

// PassphraseEnv reads the passphrase from an environment variable.
func PassphraseEnv(name string) Passphrase {
	return func() ([]byte, error) {
		v, ok := os.LookupEnv(name)
		if !ok || v == "" {
			return nil, fmt.Errorf("connector: passphrase environment variable %s is not set", name)
		}
		return []byte(v), nil
	}
}

// PassphraseFD reads the passphrase from an inherited file descriptor (up
// to the first newline, at most 4 KiB), e.g. a pipe the operator opened.
// It takes ownership of fd and closes it after reading.
func PassphraseFD(fd uintptr) Passphrase {
	return func() ([]byte, error) {
		f := os.NewFile(fd, "passphrase")
		if f == nil {
			return nil, fmt.Errorf("connector: passphrase file descriptor %d is invalid", fd)
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, 4<<10))
		if err != nil {
			return nil, fmt.Errorf("connector: reading passphrase fd: %w", err)
		}
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[:i]
		}
		b = bytes.TrimSuffix(b, []byte{'\r'})
		if len(b) == 0 {
			return nil, errors.New("connector: empty passphrase")
		}
		return b, nil
	}
}

// KeyFileOptions configures key file encryption; nil means defaults.
type KeyFileOptions struct {
	// WorkFactor is the scrypt log2(N); 0 means age's default (18).
	// Tests lower it.
	WorkFactor int
}

const (
	seedMagic = "agentprotocols-ed25519-seed-v1:"
	devHeader = "# UNENCRYPTED DEVELOPMENT KEY - do not use in production\n"
)

// ErrKeyFile reports a key file that cannot be used (wrong format, wrong
// passphrase, wrong kind of file).
var ErrKeyFile = errors.New("connector: key file")

// MinPassphraseLength is the fewest characters (Unicode code points) a new
// key file's passphrase may have: scrypt makes each guess slow, which does
// not make a short passphrase safe. Key files written earlier with a
// shorter one still load.
const MinPassphraseLength = 12

// ErrShortPassphrase is returned by GenerateKeyFile and ImportKeyFile for
// a passphrase shorter than MinPassphraseLength; nothing is written.
var ErrShortPassphrase = fmt.Errorf("connector: a key file passphrase needs at least %d characters", MinPassphraseLength)

// GenerateKeyFile creates a new Ed25519 key and writes its seed, age
// (scrypt) encrypted, to path (created 0600; an existing file is never
// overwritten). It returns the Agent ID only. A passphrase shorter than
// MinPassphraseLength is refused with ErrShortPassphrase.
func GenerateKeyFile(path string, pass Passphrase, opts *KeyFileOptions) (identity.AgentID, error) {
	k, err := identity.GenerateKey(rand.Reader)
	if err != nil {
		return identity.AgentID{}, err
	}
	return k.AgentID(), writeEncrypted(path, k.Seed(), pass, opts)
}

// ImportKeyFile writes an existing 32-byte seed to an encrypted key file,
// with the passphrase rule of GenerateKeyFile.
func ImportKeyFile(path string, seed []byte, pass Passphrase, opts *KeyFileOptions) (identity.AgentID, error) {
	k, err := identity.NewKeyFromSeed(seed)
	if err != nil {
		return identity.AgentID{}, err
	}
	return k.AgentID(), writeEncrypted(path, seed, pass, opts)
}

// LoadKeyFile decrypts an encrypted key file. A key file writable by
// group or others is refused (ErrInsecurePermissions).
func LoadKeyFile(path string, pass Passphrase) (*Key, error) {
	if err := CheckPermissions(path, 0o022); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if strings.HasPrefix(string(b), devHeader) {
		return nil, fmt.Errorf("%w: %s is an unencrypted development key; use LoadKeyFileUnencryptedDev", ErrKeyFile, path)
	}
	p, err := pass()
	if err != nil {
		return nil, err
	}
	id, err := age.NewScryptIdentity(string(p))
	if err != nil {
		return nil, err
	}
	r, err := age.Decrypt(bytes.NewReader(b), id)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrKeyFile, path, err)
	}
	plain, err := io.ReadAll(io.LimitReader(r, 1<<10))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrKeyFile, path, err)
	}
	return parseSeed(plain)
}

// GenerateKeyFileUnencryptedDev writes a new key unencrypted, for
// development only; the file says so in its first line.
func GenerateKeyFileUnencryptedDev(path string) (identity.AgentID, error) {
	k, err := identity.GenerateKey(rand.Reader)
	if err != nil {
		return identity.AgentID{}, err
	}
	return k.AgentID(), writeFile(path, []byte(devHeader+seedMagic+base64.RawURLEncoding.EncodeToString(k.Seed())+"\n"))
}

// ImportKeyFileUnencryptedDev writes a seed unencrypted, for development.
func ImportKeyFileUnencryptedDev(path string, seed []byte) (identity.AgentID, error) {
	k, err := identity.NewKeyFromSeed(seed)
	if err != nil {
		return identity.AgentID{}, err
	}
	return k.AgentID(), writeFile(path, []byte(devHeader+seedMagic+base64.RawURLEncoding.EncodeToString(seed)+"\n"))
}

// LoadKeyFileUnencryptedDev loads a development key file. The seed is in
// the clear, so the file must be the owner's alone (mode 0600 or
// stricter); anything else is ErrInsecurePermissions.
func LoadKeyFileUnencryptedDev(path string) (*Key, error) {
	if err := CheckPermissions(path, 0o077); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	rest, ok := strings.CutPrefix(string(b), devHeader)
	if !ok {
		return nil, fmt.Errorf("%w: %s is not an unencrypted development key", ErrKeyFile, path)
	}
	return parseSeed([]byte(rest))
}

func parseSeed(b []byte) (*Key, error) {
	s, ok := strings.CutPrefix(strings.TrimSpace(string(b)), seedMagic)
	if !ok {
		return nil, fmt.Errorf("%w: unknown content", ErrKeyFile)
	}
	seed, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || len(seed) != identity.SeedSize {
		return nil, fmt.Errorf("%w: malformed seed", ErrKeyFile)
	}
	k, err := identity.NewKeyFromSeed(seed)
	if err != nil {
		return nil, err
	}
	return &Key{k: k}, nil
}

func writeEncrypted(path string, seed []byte, pass Passphrase, opts *KeyFileOptions) error {
	p, err := pass()
	if err != nil {
		return err
	}
	if utf8.RuneCount(p) < MinPassphraseLength {
		return ErrShortPassphrase
	}
	rcp, err := age.NewScryptRecipient(string(p))
	if err != nil {
		return err
	}
	if opts != nil && opts.WorkFactor > 0 {
		rcp.SetWorkFactor(opts.WorkFactor)
	}
	var buf bytes.Buffer
	w, err := age.Encrypt(&buf, rcp)
	if err != nil {
		return err
	}
	if _, err := io.WriteString(w, seedMagic+base64.RawURLEncoding.EncodeToString(seed)); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return writeFile(path, buf.Bytes())
}

func writeFile(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
