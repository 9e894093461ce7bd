package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func checkEmbedder(t *testing.T, getenv map[string]string, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	e := env{stdout: &out, stderr: &errOut, getenv: func(k string) string { return getenv[k] }, home: t.TempDir(), cwd: t.TempDir(), fs: afero.NewOsFs()}
	code := run(append([]string{"recall", "check-embedder"}, args...), e)
	return out.String(), errOut.String(), code
}

// embeddingServer is an OpenAI-compatible /embeddings endpoint that
// gives a text containing one of near the direction (1, 0) and every
// other text (0, 1), each followed by 16 small draws seeded by the text
// (as a model's vectors differ from text to text).
func embeddingServer(t *testing.T, near ...string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/embeddings" {
			http.NotFound(w, r)
			return
		}
		var req struct {
			Input []string `json:"input"`
		}
		require.NoError(t, json.NewDecoder(r.Body).Decode(&req))
		var data []string
		for i, text := range req.Input {
			v := []float64{0, 1}
			for _, n := range near {
				if strings.Contains(text, n) {
					v = []float64{1, 0}
				}
			}
			h := fnv.New64a()
			h.Write([]byte(text))
			r := rand.New(rand.NewPCG(h.Sum64(), 1))
			for range 16 {
				v = append(v, r.NormFloat64()/20)
			}
			raw, _ := json.Marshal(v)
			data = append(data, fmt.Sprintf(`{"object":"embedding","index":%d,"embedding":%s}`, i, raw))
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"object":"list","model":"m","data":[%s],"usage":{"prompt_tokens":1,"total_tokens":1}}`, strings.Join(data, ","))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestCheckEmbedderOnTheShopSet: a control that knows nothing changes
// nothing on a labelled set file.
func TestCheckEmbedderOnTheShopSet(t *testing.T) {
	t.Parallel()
	shop := filepath.Join("..", "..", "testdata", "recall", "shop.json")
	for _, name := range []string{"zero", "random"} {
		out, errOut, code := checkEmbedder(t, nil, "--set", shop, "--embedder", name)
		require.Equal(t, exitOK, code, errOut)
		assert.Contains(t, out, "47 questions (14 needing no memory skipped), recall@5:")
		assert.Regexp(t, `words alone +0\.8\d\d\n  with the embedder 0\.8\d\d  \(\+0\.000; better on 0, worse on 0; found nothing with confidence on 47\)`, out)
		assert.Contains(t, out, name+" changes nothing on these questions")
	}
	out, _, code := checkEmbedder(t, nil, "--set", shop, "--embedder", "hashed-words", "--json", "--k", "3")
	require.Equal(t, exitOK, code)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	assert.Equal(t, float64(3), got["k"])
	assert.Equal(t, "hashed-words", got["embedder"])
}

// TestCheckEmbedderOverAnEndpoint: the user's memory directory and a
// labels file, an OpenAI-compatible endpoint that knows a synonym (it
// helps: exit 0), and one that points at the wrong memory and is given
// too much weight (it costs recall: exit 1).
func TestCheckEmbedderOverAnEndpoint(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, desc, body string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("---\nname: "+strings.TrimSuffix(name, ".md")+"\ndescription: "+desc+"\ntype: project\n---\n\n"+body+"\n"), 0o644))
	}
	write("car.md", "Priya bought a used sedan", "A blue sedan.")
	write("deploy.md", "the deploy window is friday morning", "Deploy in the window.")
	write("window.md", "the window cleaner comes monthly", "Ask at the desk.")
	write("lunch.md", "what the team orders for lunch", "Tacos.")
	for i := range 8 {
		write(fmt.Sprintf("note%d.md", i), fmt.Sprintf("note %d on the build cache", i), "Cache keys.")
	}
	labels := filepath.Join(t.TempDir(), "labels.json")
	require.NoError(t, os.WriteFile(labels, []byte(`[{"query": "which automobile did she get", "needs": ["car.md"]}, {"query": "thanks"}]`), 0o644))
	key := map[string]string{"OPENAI_API_KEY": "test"}

	synonyms := embeddingServer(t, "automobile", "sedan")
	out, errOut, code := checkEmbedder(t, key, "--dir", dir, "--questions", labels, "--embedder", "openai", "--openai-url", synonyms.URL, "--openai-model", "m")
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "1 questions (1 needing no memory skipped), recall@5:")
	assert.Contains(t, out, "with the embedder 1.000  (+1.000; better on 1")
	assert.Contains(t, out, "m helps on these questions")

	require.NoError(t, os.WriteFile(labels, []byte(`[{"query": "deploy window friday", "needs": ["window.md"]}]`), 0o644))
	wrong := embeddingServer(t, "deploy window friday", "lunch")
	out, errOut, code = checkEmbedder(t, key, "--dir", dir, "--questions", labels, "--embedder", "openai", "--openai-url", wrong.URL, "--k", "2", "--vector-weight", "5")
	assert.Equal(t, exitProblems, code, out+errOut)
	assert.Contains(t, out, "words alone       1.000")
	assert.Contains(t, errOut, "lowers recall on these questions")
}

func TestCheckEmbedderRefusesBadInput(t *testing.T) {
	t.Parallel()
	shop := filepath.Join("..", "..", "testdata", "recall", "shop.json")
	badSet := filepath.Join(t.TempDir(), "set.json")
	require.NoError(t, os.WriteFile(badSet, []byte(`{"memories": [{"file": "a.md", "name": "a"}], "queries": [{"query": "q", "needs": ["b.md"]}]}`), 0o644))
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"no embedder":      {[]string{"--set", shop}, "--embedder is required"},
		"unknown embedder": {[]string{"--set", shop, "--embedder", "bert"}, "no such control embedder"},
		"no key":           {[]string{"--set", shop, "--embedder", "openai"}, "needs OPENAI_API_KEY"},
		"no labels":        {[]string{"--embedder", "zero"}, "give either --set FILE"},
		"both":             {[]string{"--embedder", "zero", "--set", shop, "--questions", shop}, "give either --set FILE"},
		"not JSON":         {[]string{"--embedder", "zero", "--questions", "main.go"}, "is not the expected JSON"},
		"label misses":     {[]string{"--embedder", "zero", "--set", badSet}, `needs "b.md", which is not a memory file there`},
		"bad flag":         {[]string{"--embedder", "zero", "--nope"}, "flag provided but not defined"},
	} {
		t.Run(name, func(t *testing.T) {
			_, errOut, code := checkEmbedder(t, nil, tc.args...)
			assert.Equal(t, exitError, code)
			assert.Contains(t, errOut, tc.want)
		})
	}
	out, _, code := checkEmbedder(t, nil, "--help")
	assert.Equal(t, exitOK, code)
	assert.Contains(t, out, "usage: agentmem recall check-embedder")
	assert.Contains(t, out, "-per-folder")
}

// TestReadmeCheckEmbedder runs the README's check-embedder commands: the
// generated sets written as JSON and checked with a control, and a
// memory directory with labels checked over an OpenAI-compatible
// endpoint.
func TestReadmeCheckEmbedder(t *testing.T) {
	t.Parallel()
	sets := t.TempDir()
	mem := t.TempDir()
	write := func(name, desc, body string) {
		require.NoError(t, os.WriteFile(filepath.Join(mem, name), []byte("---\nname: "+strings.TrimSuffix(name, ".md")+"\ndescription: "+desc+"\ntype: project\n---\n\n"+body+"\n"), 0o644))
	}
	write("car.md", "Priya bought a used sedan", "A blue sedan.")
	for i := range 8 {
		write(fmt.Sprintf("note%d.md", i), fmt.Sprintf("note %d on the build cache", i), "Cache keys.")
	}
	labels := filepath.Join(t.TempDir(), "labels.json")
	require.NoError(t, os.WriteFile(labels, []byte(`[{"query": "which automobile did she get", "needs": ["car.md"]}]`), 0o644))
	srv := embeddingServer(t, "automobile", "sedan")
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	sh := newShell(t, root, []string{"OPENAI_BASE_URL=" + srv.URL},
		"-write-sets sets", "-write-sets "+sets, "--set sets/", "--set "+sets+"/",
		"~/.claude/projects/<project>/memory", mem, "labels.json", labels, "sk-...", "test")
	out, _ := sh.run(readmeBlock(t, "Check what an embedder brings before turning it on"))
	assert.Contains(t, out, "hashed-words helps on these questions")
	assert.Contains(t, out, "with the embedder 1.000  (+1.000; better on 1")
}
