package console

import (
	"bytes"
	"compress/gzip"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// asset is one file of the console's static folder as it is served: the
// style sheet without comments and spare spaces, and each file also
// gzipped (they hold no secret, so compressing them leaks nothing; pages
// are sent as they are, since they carry the session's CSRF token).
type asset struct {
	contentType  string
	plain, gzipd []byte
}

// assets are the static files by name, prepared once.
var assets = sync.OnceValues(func() (map[string]asset, error) {
	out := map[string]asset{}
	err := fs.WalkDir(staticFS, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := staticFS.ReadFile(p)
		if err != nil {
			return err
		}
		if path.Ext(p) == ".css" {
			data = minifyCSS(data)
		}
		var z bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
		_, _ = zw.Write(data)
		if err := zw.Close(); err != nil {
			return err
		}
		a := asset{contentType: mime.TypeByExtension(path.Ext(p)), plain: data}
		if z.Len() < len(data) {
			a.gzipd = z.Bytes()
		}
		out[strings.TrimPrefix(p, "static/")] = a
		return nil
	})
	return out, err
})

var (
	cssComment = regexp.MustCompile(`(?s)/\*.*?\*/`)
	cssSpace   = regexp.MustCompile(`\s+`)
	cssPunct   = regexp.MustCompile(`\s*([{};,>])\s*`)
	cssColon   = regexp.MustCompile(`:\s+`) // only a declaration has a space after its colon
)

// minifyCSS drops comments and the spaces the style sheet does not need
// (around braces, semicolons, commas and child combinators, after a
// declaration's colon).
func minifyCSS(css []byte) []byte {
	css = cssComment.ReplaceAll(css, nil)
	css = cssSpace.ReplaceAll(css, []byte(" "))
	css = cssPunct.ReplaceAll(css, []byte("$1"))
	css = cssColon.ReplaceAll(css, []byte(":"))
	return bytes.TrimSpace(bytes.ReplaceAll(css, []byte(";}"), []byte("}")))
}

// serveStatic answers a request for one static file.
func (c *Console) serveStatic(w http.ResponseWriter, r *http.Request) {
	all, err := assets()
	a, ok := all[strings.TrimPrefix(r.URL.Path, c.opts.Prefix+"/static/")]
	if err != nil || !ok || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", a.contentType)
	h.Set("Vary", "Accept-Encoding")
	body := a.plain
	if a.gzipd != nil && acceptsGzip(r) {
		h.Set("Content-Encoding", "gzip")
		body = a.gzipd
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(body)
}

// acceptsGzip reports whether the request's Accept-Encoding names gzip
// (without q=0).
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(name), "gzip") {
			continue
		}
		q := 1.0
		if v, ok := strings.CutPrefix(strings.ReplaceAll(params, " ", ""), "q="); ok {
			q, _ = strconv.ParseFloat(v, 64)
		}
		return q > 0
	}
	return false
}
