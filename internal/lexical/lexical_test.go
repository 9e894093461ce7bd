package lexical

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTokenize(t *testing.T) {
	cases := map[string][]string{
		"parseConfig reads the YAML": {"parseconfig", "pars", "config", "read", "yaml"},
		"snake_case and HTTPServer":  {"snake_case", "snake", "case", "httpserver", "http", "server"},
		"Integration tests":          {"integr", "test"},
		"数据库迁移":                      {"数据", "据库", "库迁", "迁移"},
		"测试 uses 真":                  {"测试", "use", "真"},
		"Ünïcödé café":               {"ünïcödé", "café"},
		"the of and":                 nil,
		"__init__":                   {"init"},
		"ログを確認":                      {"ログ", "グを", "を確", "確認"},
		"flaky-test quarantine list": {"flaki", "test", "quarantin", "list"},
		"XMLHttpRequest":             {"xmlhttprequest", "xml", "http", "request"},
		"":                           nil,
		// Word forms meet.
		"researching adopted planning activities": {"research", "adopt", "plan", "activ"},
		"research adopt plans activity":           {"research", "adopt", "plan", "activ"},
		"cats cat":                                {"cat", "cat"},
		// Question words say how, not what.
		"What kind of activities is Melanie getting into?": {"activ", "melani"},
		"How old are Caroline's cats?":                     {"old", "carolin", "cat"},
		"What type of way have they tried doing it like?":  nil,
	}
	for in, want := range cases {
		got := Tokenize(in)
		if len(want) == 0 {
			assert.Empty(t, got, "%q", in)
			continue
		}
		assert.Equal(t, want, got, "%q", in)
	}
	assert.Equal(t, []string{"carolin", "fact"}, tokenizeName("Caroline s4 fact 1"), "numbers in titles are not topics")
	assert.Equal(t, []string{"httpserver", "http", "server", "setup"}, tokenizeName("HTTPServer setup 2"))
}

func docs() []Document {
	return []Document{
		{Key: "testing_policy.md", Name: "Testing policy", Description: "Integration tests hit the real database", Body: "Never mock the database in integration tests."},
		{Key: "deploy.md", Name: "Deploy days", Description: "Deploys happen on Tuesdays", Body: "No deploys on Friday."},
		{Key: "config.md", Name: "Config loading", Description: "parseConfig reads YAML from config/app.yaml", Body: "Use parseConfig, never read the file directly."},
		{Key: "db_migrations.md", Name: "数据库迁移", Description: "迁移脚本必须可回滚", Body: "Migrations must be reversible."},
		{Key: "user.md", Name: "User role", Description: "Data scientist new to Go", Body: "Explain Go idioms."},
		{Key: "cats.md", Name: "Caroline s4 fact 1", Description: "Caroline adopted two cats", Body: "Caroline adopted two cats, Luna and Milo."},
	}
}

func TestIndexRanking(t *testing.T) {
	ix := NewIndex(docs()...)
	top := func(q string) string {
		hits := ix.Search(q, 5, nil)
		if len(hits) == 0 {
			return ""
		}
		return hits[0].Key
	}
	assert.Equal(t, "testing_policy.md", top("should I mock the database in the integration test?"))
	assert.Equal(t, "deploy.md", top("can we deploy on friday"))
	assert.Equal(t, "config.md", top("where does parseConfig look"))
	assert.Equal(t, "db_migrations.md", top("数据库迁移怎么回滚"))
	assert.Equal(t, "user.md", top("explain this Go idiom"))
	assert.Equal(t, "cats.md", top("When did Caroline adopt her cat?"))
	assert.Empty(t, ix.Search("completely unrelated weather question", 5, nil))
	hits := ix.Search("database", 5, nil)
	require.Len(t, hits, 1)
	assert.Equal(t, 1, hits[0].Matched)
	assert.InDelta(t, 1.0, hits[0].Coverage, 1e-9)
	assert.Empty(t, ix.Search("database", 0, nil))
	assert.Empty(t, NewIndex().Search("x", 5, nil))
	assert.Empty(t, ix.Search("database", 5, func(k string) bool { return k != "testing_policy.md" }), "keep filters")
}

func TestIndexPutReplaceDelete(t *testing.T) {
	ix := NewIndex(docs()...)
	require.Equal(t, 6, ix.Len())
	ix.Put(Document{Key: "deploy.md", Name: "Release train", Body: "Releases leave on Wednesdays."})
	assert.Equal(t, 6, ix.Len())
	assert.Empty(t, ix.Search("friday deploy", 5, nil), "the old text is gone")
	assert.Equal(t, "deploy.md", ix.Search("release wednesday", 5, nil)[0].Key)
	ix.Delete("deploy.md")
	ix.Delete("missing.md")
	assert.Equal(t, 5, ix.Len())
	assert.False(t, ix.Has("deploy.md"))
	assert.Empty(t, ix.Search("release", 5, nil))
	ix.Put(Document{Key: "new.md", Body: "quarterly release notes"})
	assert.Equal(t, "new.md", ix.Search("release", 5, nil)[0].Key, "a reused slot serves the new document")
}

// TestIndexIncrementalMatchesRebuild: an index changed one document at a
// time ranks exactly like one built from scratch on the final documents.
func TestIndexIncrementalMatchesRebuild(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 9))
	words := []string{"alpha", "beta", "gamma", "delta", "deploy", "test", "cat", "dog", "garden", "paint", "music", "travel"}
	text := func(n int) string {
		var s string
		for range n {
			s += words[r.IntN(len(words))] + " "
		}
		return s
	}
	live := map[string]Document{}
	ix := NewIndex()
	for step := range 2000 {
		key := fmt.Sprintf("d%d.md", r.IntN(150))
		if r.IntN(4) == 0 {
			ix.Delete(key)
			delete(live, key)
			continue
		}
		d := Document{Key: key, Name: text(2), Description: text(4), Body: text(3 + step%20)}
		ix.Put(d)
		live[key] = d
	}
	all := make([]Document, 0, len(live))
	for _, d := range live {
		all = append(all, d)
	}
	fresh := NewIndex(all...)
	for _, q := range []string{"alpha", "deploy test", "cat dog garden", "music travel paint beta"} {
		got, want := ix.Search(q, 10, nil), fresh.Search(q, 10, nil)
		require.Equal(t, len(want), len(got), q)
		for i := range want {
			assert.Equal(t, want[i].Key, got[i].Key, q)
			assert.InDelta(t, want[i].Score, got[i].Score, 1e-4, q)
		}
	}
}

func TestSearchTopKMatchesFullSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	words := []string{"red", "green", "blue", "cyan"}
	var ds []Document
	for i := range 300 {
		var b string
		for range 1 + r.IntN(6) {
			b += words[r.IntN(len(words))] + " "
		}
		ds = append(ds, Document{Key: fmt.Sprintf("d%03d", i), Body: b})
	}
	ix := NewIndex(ds...)
	all := ix.Search("red green blue cyan", 1000, nil)
	require.Len(t, all, 300)
	for _, k := range []int{1, 2, 5, 17, 299, 300} {
		got := ix.Search("red green blue cyan", k, nil)
		require.Len(t, got, k)
		assert.Equal(t, all[:k], got, "k=%d", k)
	}
	assert.True(t, slices.IsSortedFunc(all, better))
}

func TestSameSubject(t *testing.T) {
	subject := SubjectOf
	tuesday := subject("deploy window", "the deploy window is Tuesday afternoon")
	thursday := subject("deploy window", "the deploy window moved to Thursday afternoon")
	oncall := subject("oncall rotation", "the pager rotates weekly between four engineers")
	if !SameSubject(tuesday, thursday) {
		t.Errorf("two values of the deploy window are one subject: %v / %v", tuesday, thursday)
	}
	if SameSubject(tuesday, oncall) {
		t.Errorf("the deploy window and the pager are not one subject")
	}
	if SameSubject(tuesday, tuesday) {
		t.Errorf("a memory said twice in the same words is not a newer value")
	}
	caroline := subject("Caroline s4 fact 1", "Caroline started taking piano lessons to unwind")
	jon := subject("Jon s6 fact 2", "Jon started taking violin lessons to unwind")
	if SameSubject(caroline, jon) {
		t.Errorf("two people's lessons are two subjects")
	}
}

func TestNames(t *testing.T) {
	assert.Equal(t, []string{"freya"}, Names("What is Freya's occupation?"))
	assert.Equal(t, []string{"lisbon", "kwame"}, Names("Where in Lisbon does Kwame work? Thanks"), "a sentence's first word is no name")
	assert.Empty(t, Names("thanks, that looks good"))
}

func TestHolders(t *testing.T) {
	ix := NewIndex(Document{Key: "a", Body: "Freya is a pilot"}, Document{Key: "b", Body: "the pilot flies"})
	assert.Equal(t, []string{"a"}, ix.Holders("freya", 2))
	assert.Len(t, ix.Holders("pilot", 2), 2)
	assert.Len(t, ix.Holders("pilot", 1), 1)
	assert.Empty(t, ix.Holders("nobody", 2))
}

// TestPreparedSubject: Prepare's subject is SubjectOf the same name and
// description.
func TestPreparedSubject(t *testing.T) {
	d := Document{Key: "a", Name: "deploy-window", Description: "The deploy window moved to Thursday", Body: "body words"}
	assert.Equal(t, SubjectOf(d.Name, d.Description), NewIndex().Prepare(d).Subject())
}

// TestPlainWordsTokenizeAsIdentifiersWould: the fast path for plain words
// gives what splitting them as identifiers gives.
func TestPlainWordsTokenizeAsIdentifiersWould(t *testing.T) {
	for _, w := range []string{"deploy", "Caroline", "Deploys", "2026", "I", "x"} {
		require.True(t, plainWord(w), w)
		parts := identifierParts(w)
		require.Len(t, parts, 1, w)
		assert.Equal(t, w, parts[0])
	}
	for _, w := range []string{"parseConfig", "HTTPServer", "s4", "A1", "snake_case", "café"} {
		assert.False(t, plainWord(w), w)
	}
	assert.Equal(t, []string{"carolin", "deploy", "parseconfig", "pars", "config"}, Tokenize("Caroline deploys parseConfig"))
}
