package teammem

import (
	"bufio"
	"errors"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/spf13/afero"
)

// ErrUnsupportedRemote is matched (errors.Is) by the errors of
// ParseRepoRemote.
var ErrUnsupportedRemote = errors.New("teammem: the git remote is not an owner/name repository on an accepted host")

// defaultRepoHosts are the hosts ParseRepoRemote accepts when given none.
func defaultRepoHosts() []string { return []string{"github.com"} }

var (
	scpRemote = regexp.MustCompile(`^[A-Za-z0-9._-]+@([A-Za-z0-9.-]+):([^/]+/[^/]+?)(\.git)?/?$`)
	repoPart  = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)
)

// ParseRepoRemote turns a git remote URL into the "owner/name" repo key:
// https://host/owner/name(.git), git@host:owner/name(.git) or
// ssh://git@host/owner/name(.git). The host must be one of hosts
// (github.com when empty; compared case-insensitively); anything
// else, including deeper paths and credentials in the URL, is refused.
func ParseRepoRemote(remote string, hosts []string) (string, error) {
	if len(hosts) == 0 {
		hosts = defaultRepoHosts()
	}
	remote = strings.TrimSpace(remote)
	var host, p string
	if m := scpRemote.FindStringSubmatch(remote); m != nil && !strings.Contains(remote, "://") {
		host, p = m[1], m[2]
	} else {
		u, err := url.Parse(remote)
		if err != nil || (u.Scheme != "https" && u.Scheme != "ssh" && u.Scheme != "http") || u.Host == "" {
			return "", ErrUnsupportedRemote
		}
		if _, hasPass := u.User.Password(); hasPass || u.RawQuery != "" || u.Fragment != "" {
			return "", ErrUnsupportedRemote
		}
		host, p = u.Hostname(), strings.Trim(u.Path, "/")
	}
	p = strings.TrimSuffix(p, ".git")
	owner, name, ok := strings.Cut(p, "/")
	if !ok || strings.Contains(name, "/") || !repoPart.MatchString(owner) || !repoPart.MatchString(name) ||
		owner == "." || owner == ".." || name == "." || name == ".." {
		return "", ErrUnsupportedRemote
	}
	for _, h := range hosts {
		if strings.EqualFold(h, host) {
			return owner + "/" + name, nil
		}
	}
	return "", ErrUnsupportedRemote
}

// RepoFromGitConfig reads the url of remote "origin" from the git config of
// the checkout that contains projectRoot and parses it with
// ParseRepoRemote. For a linked worktree the main repository's config is
// read.
func RepoFromGitConfig(fsys afero.Fs, projectRoot string, hosts []string) (string, error) {
	root, ok := memdir.FindCanonicalGitRoot(fsys, projectRoot)
	if !ok {
		return "", ErrUnsupportedRemote
	}
	gitDir := filepath.Join(root, ".git")
	if info, err := fsys.Stat(gitDir); err != nil || !info.IsDir() {
		gitDir = root // a bare repository
	}
	f, err := fsys.Open(filepath.Join(gitDir, "config"))
	if err != nil {
		return "", err
	}
	defer f.Close()
	inOrigin := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			inOrigin = strings.ReplaceAll(line, " ", "") == `[remote"origin"]`
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok && inOrigin && strings.TrimSpace(k) == "url" {
			return ParseRepoRemote(strings.TrimSpace(v), hosts)
		}
	}
	return "", ErrUnsupportedRemote
}
