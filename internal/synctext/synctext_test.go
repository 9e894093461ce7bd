package synctext

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestCheckContent(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
	}{
		{"café\n", ""},
		{"caf\xe9", ReasonNotUTF8},
		{"\xed\xa0\x80", ReasonNotUTF8}, // an encoded surrogate
		{"\x89PNG\r\n\x1a\n\x00", ReasonNotUTF8},
		{"a\x00b", ReasonNUL},
		{"tab\tand\x1b[0m stay content", ""},
	} {
		err := CheckContent([]byte(tc.in))
		if tc.want == "" {
			assert.NoError(t, err, "%q", tc.in)
			continue
		}
		var e *Error
		if assert.ErrorAs(t, err, &e, "%q", tc.in) {
			assert.Equal(t, tc.want, e.Reason, "%q", tc.in)
		}
	}
}

func TestCheckName(t *testing.T) {
	for _, good := range []string{
		"notes/ci café.md",
		"می\u200cخواهم.md", // Persian: a non-joiner inside a word
		"क्\u200dष.md",     // Devanagari: a joiner after a virama
		"team/👨\u200d💻.md", // an emoji sequence
	} {
		assert.NoError(t, CheckName(good), "%q", good)
	}
	for _, bad := range []string{"a\u001b]0;TITLE\u0007.md", "a\x00b", "caf\xe9.md", "rtl\u202e.md", "line\u2028.md", "tab\t.md", "del\x7f.md",
		"deploy\u200c.md", "a\u200db.md", "\u200cx.md", "zw\u200b.md"} {
		assert.Error(t, CheckName(bad), "%q", bad)
	}
}

func TestCheckJSONBody(t *testing.T) {
	for _, tc := range []struct {
		body string
		ok   bool
	}{
		{`{"entries":{"a.md":"café \u00e9 \ud83d\ude00 \\u0000 \"q\""}}`, true},
		{"{\"entries\":{\"a.md\":\"caf\xe9\"}}", false},
		{`{"content":"a\u0000b"}`, false},
		{`{"content":"a\ud800b"}`, false},
		{`{"content":"a\udc00b"}`, false},
		{`{"content":"\ud800\u0041"}`, false},
		{`{"content":"end\\"}`, true},
	} {
		err := CheckJSONBody([]byte(tc.body))
		assert.Equal(t, tc.ok, err == nil, "%s: %v", tc.body, err)
	}
}

// FuzzCheckJSONBody pins the invariant the servers rely on: a body the
// check accepts decodes to strings that are exactly what was sent, so
// encoding them again and decoding gives the same text, and no U+FFFD
// appears that the body did not spell.
func FuzzCheckJSONBody(f *testing.F) {
	f.Add([]byte(`"caf\u00e9"`))
	f.Add([]byte("\"caf\xe9\""))
	f.Add([]byte(`"\ud800"`))
	f.Add([]byte(`"\ud83d\ude00"`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var s string
		if CheckJSONBody(raw) != nil || json.Unmarshal(raw, &s) != nil {
			return
		}
		if strings.ContainsRune(s, '\uFFFD') && !strings.ContainsRune(string(raw), '\uFFFD') && !strings.Contains(strings.ToLower(string(raw)), `\ufffd`) {
			t.Fatalf("%q decoded to a replacement character", raw)
		}
		if CheckContent([]byte(s)) != nil {
			t.Fatalf("%q decoded to content that cannot be carried", raw)
		}
	})
}

// A name with a suffix stays within what a filesystem holds, is cut at a
// character boundary, and two long names that differ only at their end
// stay different; a short one only gets the suffix.
func TestFitName(t *testing.T) {
	suffix := ".20261203T150405.000Z.md"
	assert.Equal(t, "dir/short"+suffix, FitName("dir/short", suffix))
	long := strings.Repeat("é", 120) + "a" // 241 bytes
	other := strings.Repeat("é", 120) + "b"
	got := FitName("dir/"+long, suffix)
	name := strings.TrimPrefix(got, "dir/")
	assert.LessOrEqual(t, len(name), MaxNameBytes)
	assert.True(t, utf8.ValidString(name), "cut at a character boundary")
	assert.True(t, strings.HasSuffix(name, suffix))
	assert.NotEqual(t, got, FitName("dir/"+other, suffix), "names that differ at the end stay apart")
}

func TestCheckJSONShape(t *testing.T) {
	for body, want := range map[string]error{
		`{"entries":{"a.md":"x"}}`:                         nil,
		`{"entries":{"a.md":"x","a.md":"y"}}`:              ErrDuplicateKey,
		`{"entries":{"a.md":"x"},"entries":{}}`:            ErrDuplicateKey,
		`[{"k":1},{"k":2}]`:                                nil,
		`{"entries":{"a.md":"x"}} {"entries":{}}`:          ErrTrailingData,
		`{"entries":{"a.md":"x"}}garbage`:                  ErrTrailingData,
		"{\"entries\":{\"a.md\":\"x\"}}\n  \t":             nil,
		`{"a":"\u0061","\u0061":1}`:                        ErrDuplicateKey,
		`not json`:                                         nil,
		`{"entries":{"a.md":"ok"},"Entries":{"b.md":"x"}}`: ErrDuplicateKey,
		`{"entries":{"A.md":"x","a.md":"y"}}`:              nil,
		`{"content":"A \"quoted\" {\"k\":1,\"k\":2}"}`:     nil,
	} {
		assert.Equal(t, want, CheckJSONShape([]byte(body)), body)
	}
}
