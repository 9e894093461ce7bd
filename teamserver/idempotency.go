package teamserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"
)

// Idempotency keys. A POST of the Memory Stores API (create a store or a
// memory, update, archive, redact) sent with an Idempotency-Key header is
// carried out once per key: the answer is kept, and a retry with the same
// key and the same body gets it again, marked Idempotent-Replayed: true,
// without being carried out again. A key is its token's, for one method,
// path and query, kept IdempotencyKeep, at most MaxIdempotencyKeys per
// token at a time. The store keeps the keys, so servers on one database
// share them. An answer that holds a memory's content (?view=full) is
// not kept, so none outlives a deletion or a redaction: the key only
// stops a second run while the first is running.
const (
	// IdempotencyKeyHeader names the request's key: 1 to 255 printable
	// ASCII characters.
	IdempotencyKeyHeader = "Idempotency-Key"
	// IdempotentReplayedHeader marks an answer given again for a key.
	IdempotentReplayedHeader = "Idempotent-Replayed"
	// IdempotencyKeep is how long an answer is kept for its key.
	IdempotencyKeep = 24 * time.Hour
	// idempotencyClaim is how long a request may hold its key before the
	// key is taken to be abandoned (a server that stopped mid-request).
	idempotencyClaim = time.Minute
	// maxIdempotentBody bounds the answer kept; a larger one is not kept
	// (the key is released).
	maxIdempotentBody = 64 << 10
	// MaxIdempotencyKeys bounds the keys one token holds at once; past it
	// a request with a new key is answered 429.
	MaxIdempotencyKeys = 10_000
)

// errTooManyKeys is a store's answer to a claim past MaxIdempotencyKeys.
var errTooManyKeys = &APIError{Status: http.StatusTooManyRequests, Type: "rate_limit_error",
	Message: "this token holds as many idempotency keys as the server keeps (10,000 in 24 hours); retry later, or send the request without an Idempotency-Key"}

// keptAnswer is the answer kept for a key (Status 0: the request that
// claimed the key is still running).
type keptAnswer struct {
	RequestSHA  string
	Status      int
	ContentType string
	Body        []byte
}

// idempotencyStore keeps the keys' answers.
type idempotencyStore interface {
	// claimKey returns the answer kept for key and true, or claims key for
	// token's request whose body hashes to requestSHA and returns false
	// (errTooManyKeys past MaxIdempotencyKeys of the token's).
	claimKey(ctx context.Context, token, key, requestSHA string, now time.Time) (keptAnswer, bool, error)
	// keepAnswer records the answer of the request that claimed key.
	keepAnswer(ctx context.Context, key string, a keptAnswer) error
	// releaseKey forgets a claim whose request failed, so a retry runs.
	releaseKey(ctx context.Context, key string) error
}

// idempotent runs a Memory Stores POST that carries an Idempotency-Key
// once per key (run: the route), and answers a retry with the kept
// answer. Without a key, or with a store that keeps none, it just runs.
func (h *Handler) idempotent(w *statusWriter, r *http.Request, c *request, run func(w http.ResponseWriter, r *http.Request)) {
	raw, sent := r.Header[http.CanonicalHeaderKey(IdempotencyKeyHeader)]
	keys, ok := h.stores.(idempotencyStore)
	if r.Method != http.MethodPost || !sent || !ok {
		run(w, r)
		return
	}
	if len(raw) != 1 || !validIdempotencyKey(raw[0]) {
		writeStoresError(w, invalid("the %s header must be sent once, with 1 to 255 printable ASCII characters", IdempotencyKeyHeader))
		return
	}
	call := &storesCall{h: h, w: w, r: r}
	body, ok := call.readBody()
	if !ok {
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	// Claude Code's route names its store outside the path its inner mux
	// sees: the reference is part of the key too.
	ref, _ := r.Context().Value(codeStoreKey{}).(string)
	key := idempotencyID(c.grant.TokenSHA256, r.Method, ref+"\x00"+r.URL.Path+"?"+r.URL.RawQuery, raw[0])
	sum := sha256.Sum256(body)
	requestSHA := hex.EncodeToString(sum[:])
	kept, found, err := keys.claimKey(r.Context(), c.grant.TokenSHA256, key, requestSHA, h.cfg.Now())
	switch {
	case err != nil:
		call.fail(err)
		return
	case found && kept.RequestSHA != requestSHA:
		writeStoresError(w, &APIError{Status: http.StatusUnprocessableEntity, Type: "invalid_request_error",
			Message: "this " + IdempotencyKeyHeader + " was used with another request body; send a new key for a new request"})
		return
	case found && kept.Status == 0:
		w.Header().Set("Retry-After", "1")
		writeStoresError(w, &APIError{Status: http.StatusConflict, Type: "conflict_error",
			Message: "a request with this " + IdempotencyKeyHeader + " is still running; retry in a moment for its answer"})
		return
	case found:
		w.Header().Set("Content-Type", kept.ContentType)
		w.Header().Set(IdempotentReplayedHeader, "true")
		w.WriteHeader(kept.Status)
		_, _ = w.Write(kept.Body)
		return
	}
	rec := &bodyCopy{ResponseWriter: w}
	ctx := context.WithoutCancel(r.Context())
	keeping := false
	defer func() {
		if !keeping {
			_ = keys.releaseKey(ctx, key) // not an answer to keep (or the route panicked): a retry runs again
		}
	}()
	run(rec, r)
	if w.status >= 500 || w.status == http.StatusTooManyRequests || rec.over || r.URL.Query().Get("view") == "full" {
		return
	}
	keeping = true
	if err := keys.keepAnswer(ctx, key, keptAnswer{RequestSHA: requestSHA, Status: w.status, ContentType: w.Header().Get("Content-Type"), Body: rec.body.Bytes()}); err != nil {
		h.log.Warn("an idempotent answer could not be kept; a retry with its key will be refused as running until the claim lapses", "error", err)
	}
}

func validIdempotencyKey(k string) bool {
	if len(k) == 0 || len(k) > 255 {
		return false
	}
	for i := range len(k) {
		if k[i] < 0x21 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// idempotencyID is the stored name of a key: its token's, for one method
// and path.
func idempotencyID(token, method, path, key string) string {
	sum := sha256.Sum256([]byte(token + "\n" + method + "\n" + path + "\n" + key))
	return hex.EncodeToString(sum[:])
}

// bodyCopy passes an answer's body on and keeps a copy of it, up to
// maxIdempotentBody (the status is the statusWriter's below it).
type bodyCopy struct {
	http.ResponseWriter
	body bytes.Buffer
	over bool // larger than maxIdempotentBody: not kept
}

func (a *bodyCopy) Write(b []byte) (int, error) {
	if !a.over {
		if a.body.Len()+len(b) > maxIdempotentBody {
			a.over = true
			a.body.Reset()
		} else {
			a.body.Write(b)
		}
	}
	return a.ResponseWriter.Write(b)
}

// ---- in memory ----

// memIdempotency is memoryStore's keys.
type memIdempotency struct {
	mu       sync.Mutex
	keys     map[string]memKept
	perToken map[string]int // keys held per token
	swept    time.Time      // when expired keys were last dropped
}

type memKept struct {
	keptAnswer
	at    time.Time
	token string
}

func (s *memoryStore) claimKey(_ context.Context, token, key, requestSHA string, now time.Time) (keptAnswer, bool, error) {
	m := &s.idempotency
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.keys == nil {
		m.keys, m.perToken = map[string]memKept{}, map[string]int{}
	}
	if now.Sub(m.swept) > time.Minute {
		m.swept = now
		for k, v := range m.keys {
			if now.Sub(v.at) > IdempotencyKeep {
				delete(m.keys, k)
				m.perToken[v.token]--
			}
		}
	}
	v, ok := m.keys[key]
	if ok && now.Sub(v.at) <= IdempotencyKeep && (v.Status != 0 || now.Sub(v.at) < idempotencyClaim) {
		return v.keptAnswer, true, nil
	}
	if ok {
		m.perToken[v.token]-- // expired, or an abandoned claim: taken over below
	}
	if m.perToken[token] >= MaxIdempotencyKeys {
		return keptAnswer{}, false, errTooManyKeys
	}
	m.keys[key] = memKept{keptAnswer: keptAnswer{RequestSHA: requestSHA}, at: now, token: token}
	m.perToken[token]++
	return keptAnswer{}, false, nil
}

func (s *memoryStore) keepAnswer(_ context.Context, key string, a keptAnswer) error {
	m := &s.idempotency
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := m.keys[key]; ok {
		v.keptAnswer = a
		m.keys[key] = v
	}
	return nil
}

func (s *memoryStore) releaseKey(_ context.Context, key string) error {
	m := &s.idempotency
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := m.keys[key]; ok && v.Status == 0 {
		delete(m.keys, key)
		m.perToken[v.token]--
	}
	return nil
}

// ---- SQL ----

const idempotencySchema = `
CREATE TABLE IF NOT EXISTS ms_idempotency (
	key_sha TEXT PRIMARY KEY, request_sha TEXT NOT NULL, status BIGINT NOT NULL,
	content_type TEXT NOT NULL, body TEXT NOT NULL, created_ms BIGINT NOT NULL,
	token_sha TEXT NOT NULL DEFAULT '');
CREATE INDEX IF NOT EXISTS ms_idempotency_by_age ON ms_idempotency (created_ms);
`

// idempotencyIndexes come after the migration that may add token_sha.
const idempotencyIndexes = `CREATE INDEX IF NOT EXISTS ms_idempotency_by_token ON ms_idempotency (token_sha);`

func (s *sqlStore) claimKey(ctx context.Context, token, key, requestSHA string, now time.Time) (keptAnswer, bool, error) {
	var kept keptAnswer
	found := false
	err := s.write(ctx, "idempotency\n"+key, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM ms_idempotency WHERE created_ms < ?`), ms(now.Add(-IdempotencyKeep))); err != nil {
			return err
		}
		var body string
		var created int64
		err := tx.QueryRowContext(ctx, s.q(`SELECT request_sha, status, content_type, body, created_ms FROM ms_idempotency WHERE key_sha = ?`), key).
			Scan(&kept.RequestSHA, &kept.Status, &kept.ContentType, &body, &created)
		switch {
		case err == nil && (kept.Status != 0 || now.Sub(fromMS(created)) < idempotencyClaim):
			kept.Body, found = []byte(body), true
			return nil
		case err == nil: // an abandoned claim: take it over
			_, err = tx.ExecContext(ctx, s.q(`UPDATE ms_idempotency SET request_sha = ?, created_ms = ? WHERE key_sha = ?`), requestSHA, ms(now), key)
			return err
		case errors.Is(err, sql.ErrNoRows):
			var held int
			if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM ms_idempotency WHERE token_sha = ?`), token).Scan(&held); err != nil {
				return err
			}
			if held >= MaxIdempotencyKeys {
				return errTooManyKeys
			}
			_, err = tx.ExecContext(ctx, s.q(`INSERT INTO ms_idempotency (key_sha, request_sha, status, content_type, body, created_ms, token_sha) VALUES (?, ?, 0, '', '', ?, ?)`), key, requestSHA, ms(now), token)
			return err
		}
		return err
	})
	return kept, found, err
}

func (s *sqlStore) keepAnswer(ctx context.Context, key string, a keptAnswer) error {
	return s.write(ctx, "idempotency\n"+key, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, s.q(`UPDATE ms_idempotency SET status = ?, content_type = ?, body = ? WHERE key_sha = ? AND request_sha = ?`),
			a.Status, a.ContentType, string(a.Body), key, a.RequestSHA)
		return err
	})
}

func (s *sqlStore) releaseKey(ctx context.Context, key string) error {
	return s.write(ctx, "idempotency\n"+key, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, s.q(`DELETE FROM ms_idempotency WHERE key_sha = ? AND status = 0`), key)
		return err
	})
}
