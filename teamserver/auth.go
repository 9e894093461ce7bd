package teamserver

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
)

// TokenGrant is one line of the token file: the SHA-256 of a bearer token
// (never the token itself), the tenant it belongs to, and the repos it may
// use ("owner/name" exactly, or "owner/*").
type TokenGrant struct {
	TokenSHA256  string   `json:"token_sha256"`
	Organization string   `json:"organization"`
	Repos        []string `json:"repos"`
	// Name says who holds the token ("alice", "ci"): the author of their
	// writes in the history and the log. Optional.
	Name string `json:"name,omitempty"`
	// Stores are the memory stores the token may use: "*" for every store
	// of its organization (and creating stores), or store IDs. A token
	// without stores cannot use the Memory Stores API.
	Stores []string `json:"stores,omitempty"`
	// Manage lets a token limited to some stores archive and delete them;
	// without it such a token reads and writes their memories only. A
	// "*" token always may.
	Manage bool `json:"manage,omitempty"`
	// Kind says whose the token is: KindPerson or KindAgent. A grant
	// without it is an agent's: it writes, but its writes to a repo or
	// store under review wait for a person, and it cannot approve,
	// reject or change a review policy.
	Kind string `json:"kind,omitempty"`
}

// Token kinds.
const (
	KindPerson = "person"
	KindAgent  = "agent"
)

// IsPerson reports whether the token is a person's (Kind KindPerson).
func (g TokenGrant) IsPerson() bool { return g.Kind == KindPerson }

// author names the grant's holder in the history: its name, or the first
// characters of its token hash.
func (g TokenGrant) author() string {
	if g.Name != "" {
		return g.Name
	}
	return "token:" + g.TokenSHA256[:min(12, len(g.TokenSHA256))]
}

var (
	slugRe    = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$`)
	patternRe = regexp.MustCompile(`^[A-Za-z0-9_.-]+/([A-Za-z0-9_.-]+|\*)$`)
	hexRe     = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// ValidRepoSlug reports whether s is "owner/name" with safe characters
// (and neither part "." or "..").
func ValidRepoSlug(s string) bool {
	if !slugRe.MatchString(s) {
		return false
	}
	owner, name, _ := strings.Cut(s, "/")
	return owner != "." && owner != ".." && name != "." && name != ".."
}

// HashToken returns the hex SHA-256 of a bearer token, as the token file
// stores it.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// NewToken returns a fresh random token and its grant: the repos it may
// sync and the memory stores it may use ("*" or store IDs).
func NewToken(org string, repos []string, stores ...string) (string, TokenGrant, error) {
	g := TokenGrant{Organization: org, Repos: repos, Stores: stores}
	if err := g.validateScope(); err != nil {
		return "", TokenGrant{}, err
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", TokenGrant{}, err
	}
	token := "amt_" + hex.EncodeToString(raw[:])
	g.TokenSHA256 = HashToken(token)
	return token, g, nil
}

func (g TokenGrant) validate() error {
	if err := g.validateScope(); err != nil {
		return err
	}
	if !hexRe.MatchString(g.TokenSHA256) {
		return fmt.Errorf("token_sha256 must be 64 lower-case hex digits")
	}
	return nil
}

// validateScope checks the organization and repo patterns.
func (g TokenGrant) validateScope() error {
	if g.Organization == "" {
		return fmt.Errorf("a grant needs an organization")
	}
	if g.Kind != "" && g.Kind != KindPerson && g.Kind != KindAgent {
		return fmt.Errorf("kind %q is not person or agent", g.Kind)
	}
	if len(g.Repos) == 0 && len(g.Stores) == 0 {
		return fmt.Errorf("a grant needs at least one repo pattern or memory store")
	}
	for _, st := range g.Stores {
		if st != "*" && !strings.HasPrefix(st, StoreIDPrefix) {
			return fmt.Errorf("memory store %q is not * or a store ID (%s...)", st, StoreIDPrefix)
		}
	}
	for _, p := range g.Repos {
		if !patternRe.MatchString(p) {
			return fmt.Errorf("repo pattern %q is not owner/name or owner/*", p)
		}
	}
	return nil
}

// allows reports whether the grant covers repo.
func (g TokenGrant) allows(repo string) bool {
	owner, _, _ := strings.Cut(repo, "/")
	return slices.Contains(g.Repos, repo) || slices.Contains(g.Repos, owner+"/*")
}

// LoadTokens reads a token file: a JSON array of grants.
func LoadTokens(r io.Reader) ([]TokenGrant, error) {
	var grants []TokenGrant
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&grants); err != nil {
		return nil, fmt.Errorf("server: the token file is not a JSON array of grants (%w): make entries with agentmem team token --add", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("server: the token file has more after its JSON array: it must hold one array of grants and nothing else")
	}
	for i, g := range grants {
		if err := g.validate(); err != nil {
			return nil, fmt.Errorf("server: token file entry %d: %w", i+1, err)
		}
	}
	return grants, nil
}
