package main

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"

	"github.com/agentprotocols/go-sdk/connector"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
)

// Config is the operator's connector configuration: a JSON file that only
// the operator edits. Agents have no tool that changes it (§4.3, §6).
// Relative paths are relative to the config file's directory.
type Config struct {
	// KeyFile is the key store: an age (scrypt) encrypted Ed25519 seed,
	// key.age by default; an unencrypted development key is
	// key.unencrypted-dev by default, so that its name says what it is.
	KeyFile string `json:"key_file,omitempty"`
	// KeyUnencryptedDev marks KeyFile as an unencrypted development key
	// (keygen --unencrypted-dev). Never for real identities.
	KeyUnencryptedDev bool `json:"key_unencrypted_dev,omitempty"`
	// PassphraseEnv names the environment variable holding the key file
	// passphrase (default AGENT_PROTOCOLS_PASSPHRASE). The passphrase is
	// never read from stdin: over stdio that is the MCP channel.
	PassphraseEnv string `json:"passphrase_env,omitempty"`
	// StateDir holds the connector's durable state (one process at a time).
	StateDir string `json:"state_dir,omitempty"`
	// TokenFile holds the --http bearer token (created 0600 on first run).
	TokenFile string `json:"token_file,omitempty"`
	// Hosts is the host allowlist: the only hosts the connector signs for.
	Hosts []connector.HostConfig `json:"hosts"`
	// Profiles are the active Agent ID's profile service URLs.
	Profiles []string `json:"profiles,omitempty"`
	// Watch lists custom event types that create room.event.custom items.
	Watch []string `json:"watch,omitempty"`
	// AllowLoopbackHTTP admits http://127.0.0.1 hosts (local development).
	AllowLoopbackHTTP bool `json:"allow_loopback_http,omitempty"`
	// WritesPerMinute limits signed writes (0: the engine's default).
	WritesPerMinute int `json:"writes_per_minute,omitempty"`

	dir     string // the config file's directory
	keyFile string // KeyFile as the file has it ("": the default)
	// note is said to the operator on standard error: the development key
	// was found under its old name.
	note string
}

const (
	configDirName        = "agent-protocols-connector"
	defaultPassphraseEnv = "AGENT_PROTOCOLS_PASSPHRASE"
	// The default key file names: the encrypted key, and the unencrypted
	// development key, whose name must not pass for an encrypted one's.
	// Before, the development key was written to key.age too; such a key
	// is still read there (resolveKeyFile).
	encryptedKeyName   = "key.age"
	unencryptedKeyName = "key.unencrypted-dev"
)

// defaultConfigPath is connector.json under the user config directory
// (for example ~/.config/agent-protocols-connector/ on Linux).
func defaultConfigPath() (string, error) {
	d, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no user config directory (%v); pass --config", err)
	}
	return filepath.Join(d, configDirName, "connector.json"), nil
}

// loadConfig reads and checks the config at path. A missing file is an
// error unless allowMissing (keygen creates it).
func loadConfig(path string, allowMissing bool) (*Config, error) {
	c := &Config{dir: filepath.Dir(path)}
	// The config is the host allowlist: another user who could write it
	// could add a host.
	if err := connector.CheckPermissions(path, 0o022); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("config %s: %v", path, err)
	}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && allowMissing:
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("config %s does not exist; run `agent-protocols-connector keygen` to create it, then add hosts", path)
	case err != nil:
		return nil, fmt.Errorf("config %s is unreadable: %v", path, err)
	default:
		if len(b) > 1<<20 {
			return nil, fmt.Errorf("config %s: larger than 1 MiB", path)
		}
		if err := strictjson.Unmarshal(b, c); err != nil {
			return nil, fmt.Errorf("config %s is not a valid connector config: %v", path, err)
		}
	}
	c.keyFile = c.KeyFile
	if c.StateDir == "" {
		c.StateDir = "state"
	}
	if c.TokenFile == "" {
		c.TokenFile = "http-token"
	}
	if c.PassphraseEnv == "" {
		c.PassphraseEnv = defaultPassphraseEnv
	}
	for _, p := range []*string{&c.StateDir, &c.TokenFile} {
		if !filepath.IsAbs(*p) {
			*p = filepath.Join(c.dir, *p)
		}
	}
	c.resolveKeyFile()
	for i, h := range c.Hosts {
		u, err := url.Parse(h.Host)
		if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || u.Path != "" && u.Path != "/" {
			return nil, fmt.Errorf("config %s: hosts[%d].host %q: want an origin such as https://api.example", path, i, h.Host)
		}
	}
	return c, nil
}

// resolveKeyFile sets KeyFile: the config's key_file, or the default name
// for the kind of key, relative to the config file's directory. A
// development key written before it had its own name is read at
// key.age, with a note saying to rename it.
func (c *Config) resolveKeyFile() {
	c.note = ""
	name := c.keyFile
	if name == "" {
		name = encryptedKeyName
		if c.KeyUnencryptedDev {
			name = unencryptedKeyName
		}
	}
	if !filepath.IsAbs(name) {
		name = filepath.Join(c.dir, name)
	}
	c.KeyFile = name
	if c.keyFile != "" || !c.KeyUnencryptedDev {
		return
	}
	old := filepath.Join(c.dir, encryptedKeyName)
	if _, err := os.Stat(name); errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(old); err == nil {
			c.KeyFile = old
			c.note = fmt.Sprintf("the unencrypted development key is at %s, the name of an encrypted key; rename it to %s (or set key_file)", old, name)
		}
	}
}

// save writes a new config file (0600; never overwrites).
func (c *Config) save(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	b, err := marshalIndent(c)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// loadKey opens the key store named by the config, with an error that
// says what to do when there is no key.
func (c *Config) loadKey() (*connector.Key, error) {
	if _, err := os.Stat(c.KeyFile); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no key at %s; run `agent-protocols-connector keygen` first", c.KeyFile)
	}
	if c.KeyUnencryptedDev {
		return connector.LoadKeyFileUnencryptedDev(c.KeyFile)
	}
	k, err := connector.LoadKeyFile(c.KeyFile, connector.PassphraseEnv(c.PassphraseEnv))
	if err != nil {
		return nil, fmt.Errorf("key %s: %w", c.KeyFile, err)
	}
	return k, nil
}
