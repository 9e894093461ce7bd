package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentmem-sdk/agentmem/memdir"
	"github.com/spf13/afero"
)

// MinisearchVersion is the npm package the peer runs.
const MinisearchVersion = "7.2.0"

// minisearchScript indexes the memories it reads on its first stdin line
// (name, description, body; name boosted 3, description 2, as agentmem
// weighs them) and then answers one query per line with the top five ids,
// using minisearch's prefix and fuzzy matching.
const minisearchScript = `
const MiniSearch = require('minisearch');
const readline = require('readline');
const rl = readline.createInterface({ input: process.stdin });
let ms = null;
rl.on('line', (line) => {
  if (ms === null) {
    const docs = JSON.parse(line);
    ms = new MiniSearch({ fields: ['name', 'description', 'body'], storeFields: [] });
    ms.addAll(docs);
    process.stdout.write('ready\n');
    return;
  }
  const q = JSON.parse(line);
  const hits = ms.search(q, { prefix: true, fuzzy: 0.2, boost: { name: 3, description: 2 } });
  process.stdout.write(JSON.stringify(hits.slice(0, 5).map((h) => h.id)) + '\n');
});
`

// Minisearch runs the minisearch npm library in a node process: a peer
// measured in the same run, on the same files.
type Minisearch struct {
	dir  string // where node_modules/minisearch is installed
	node *nodeProcess
}

// NewMinisearch installs minisearch (once, into the user's cache
// directory) and returns the peer; an error says why it cannot run (no
// node or npm, no network for npm).
func NewMinisearch() (*Minisearch, error) {
	dir, err := npmInstall("minisearch-"+MinisearchVersion, "minisearch@"+MinisearchVersion)
	if err != nil {
		return nil, err
	}
	return &Minisearch{dir: dir}, nil
}

// Name implements Method.
func (m *Minisearch) Name() string { return "minisearch " + MinisearchVersion }

// Prepare starts a node process over the memories of dir.
func (m *Minisearch) Prepare(ctx context.Context, dir string) error {
	m.Close()
	type doc struct {
		ID          string `json:"id"`
		Name        string `json:"name"`
		Description string `json:"description"`
		Body        string `json:"body"`
	}
	var docs []doc
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".md") || d.Name() == memdir.EntrypointName {
			return err
		}
		data, err := afero.ReadFile(afero.NewOsFs(), p)
		if err != nil {
			return err
		}
		fm, body, _ := memdir.ParseFrontmatter(data)
		rel, _ := filepath.Rel(dir, p)
		docs = append(docs, doc{ID: filepath.ToSlash(rel), Name: fm.Name, Description: fm.Description, Body: string(body)})
		return nil
	})
	if err != nil {
		return err
	}
	line, _ := json.Marshal(docs)
	node, err := startNode(minisearchScript, m.dir, line)
	if err != nil {
		return fmt.Errorf("minisearch: %w", err)
	}
	m.node = node
	return nil
}

// Answer implements Method.
func (m *Minisearch) Answer(_ context.Context, query string) ([]string, error) {
	if m.node == nil {
		return nil, errors.New("minisearch: Prepare first")
	}
	var ids []string
	if err := m.node.ask(query, &ids); err != nil {
		return nil, fmt.Errorf("minisearch: %w", err)
	}
	return ids, nil
}

// Close ends the node process.
func (m *Minisearch) Close() {
	if m.node != nil {
		m.node.close()
	}
}
