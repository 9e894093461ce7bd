package recall

import (
	"bytes"
	"context"
	"crypto/sha256"
	"math"
	"slices"
	"strings"

	"github.com/agentmem-sdk/agentmem/internal/lexical"
)

// meaningPairs are the embedder's test of meaning: each question asks
// for its statement in other words (no word in common), so words alone cannot pair them and an embedder that knows
// only words pairs them by chance, while one that knows what the words
// mean pairs most of them.
var meaningPairs = [...][2]string{
	{"When do we ship new releases?", "Deploys go out every Tuesday and Thursday."},
	{"Which programming language is the backend written in?", "Server code: Go."},
	{"Who handles billing problems?", "Priya deals with invoices and payments."},
	{"Where does Anna live now?", "Lisbon became her home last spring."},
	{"What is Tom's job?", "He works as a nurse at a hospital."},
	{"What pet does the family own?", "They adopted a puppy named Rex."},
	{"How do I run the test suite?", "Use make check to execute every unit check."},
	{"Which instrument is Mia learning?", "She started cello lessons after work."},
	{"Where are customer records stored?", "User accounts live in PostgreSQL."},
	{"What is Omar's favourite meal?", "He loves eating sushi more than anything."},
	{"How did Lena get injured?", "She broke her ankle while skiing."},
	{"What car does Sam drive?", "He bought a red Tesla last year."},
	{"Which city hosts our headquarters?", "The main office sits in Berlin."},
	{"What sport does their kid play?", "Our son joined a football team."},
	{"Why was the build failing?", "A missing dependency broke compilation."},
	{"Who manages engineering?", "Karl leads all developers."},
	{"What hobby helps Eva relax?", "Painting watercolours calms her down."},
	{"When is the office closed?", "Nobody comes in on public holidays."},
	{"Which language is Ines studying?", "She takes Japanese classes twice weekly."},
	{"Where did they go for vacation?", "August was spent at a Greek beach."},
	{"What is the deadline for the report?", "That document must arrive by Friday."},
	{"Which editor does Raj prefer?", "He writes code in Vim."},
	{"How often are backups made?", "Disk snapshots get taken nightly."},
	{"What allergy does Zoe have?", "Peanuts make her sick."},
}

// How much the vector side may speak, by trust (see vectorTrust): with
// none it is held to falseAlarm and VectorWeight, as for an embedder that
// knows only words; with full trust its false-alarm rate rises to
// trustedFalseAlarm and its weight to trustedWeight times VectorWeight.
const (
	trustedFalseAlarm = 0.5
	trustedWeight     = 4.0
	// fitProbes is how many of a directory's memories test the embedder
	// on it; fewer than minFitProbes with a description leave the
	// directory's fit at 1 (meaning alone decides).
	fitProbes    = 32
	minFitProbes = 8
	// goodFit is the embedder's rank quality, as a share of the words',
	// on the directory's probes at which it is fully trusted there.
	goodFit = 0.7
)

// Trust is how far a Finder trusts its embedder on its directory, and
// what that lets the vector side do (reported in Event).
type Trust struct {
	// Meaning is how well the embedder pairs questions with statements
	// that share no word with them (0: chance or worse, 1: all first).
	Meaning float64
	// Fit is how well it finds the directory's own memories for their
	// descriptions with the most telling word left out, against words
	// (1: at least goodFit of their rank quality; 0: not at all).
	Fit float64
	// Weight is what a memory found by meaning with full confidence
	// adds to its score (the best word match scores 1); FalseAlarm is
	// the chance per message that an embedder that knows nothing still
	// has a memory found by meaning.
	Weight, FalseAlarm float64
}

// level is Meaning times Fit: 0 holds the vector side to its strictest,
// 1 lets it speak most.
func (t Trust) level() float64 { return t.Meaning * t.Fit }

// vectorTrust measures the embedder (its meaning once per Finder, its fit
// again when the directory's size moved by a tenth) and returns the trust
// it earns here.
func (f *Finder) vectorTrust(ctx context.Context, snap *snapshot) (Trust, error) {
	c := f.corpus
	c.trustMu.Lock()
	defer c.trustMu.Unlock()
	if !c.meaningKnown {
		c.openCache(ctx)
		vecs, err := c.embedAux(ctx, meaningTexts())
		if err != nil {
			return Trust{}, err
		}
		c.trust.Meaning, c.meaningKnown = meaningOf(vecs), true
	}
	n := len(snap.headers)
	if c.fitAt == 0 || math.Abs(float64(n-c.fitAt)) >= float64(c.fitAt)/10 {
		fit, err := f.fit(ctx, snap)
		if err != nil {
			return Trust{}, err
		}
		c.trust.Fit, c.fitAt = fit, max(n, 1)
	}
	t := c.trust
	t.FalseAlarm = falseAlarm + (trustedFalseAlarm-falseAlarm)*t.level()
	t.Weight = f.cfg.VectorWeight * (1 + (trustedWeight-1)*t.level())
	return t, nil
}

// meaningTexts are the questions of meaningPairs, then the statements.
func meaningTexts() []string {
	texts := make([]string, 0, 2*len(meaningPairs))
	for _, p := range meaningPairs {
		texts = append(texts, p[0])
	}
	for _, p := range meaningPairs {
		texts = append(texts, p[1])
	}
	return texts
}

// meaningOf scores the vectors of meaningPairs (the questions, then the
// statements): the mean reciprocal rank of each question's statement
// among all the statements, scaled so that chance is 0 and every pair
// ranked first is 1 (worse than chance is 0). Ties count against the
// embedder: one that gives every text one vector ranks each statement
// last.
func meaningOf(vecs []vector) float64 {
	n := len(meaningPairs)
	var mrr, chance float64
	for i := range n {
		own := cosine(vecs[i], vecs[n+i])
		rank := 1
		for j := range n {
			if j != i && cosine(vecs[i], vecs[n+j]) >= own {
				rank++
			}
		}
		mrr += 1 / float64(rank)
		chance += 1 / float64(i+1)
	}
	mrr /= float64(n)
	chance /= float64(n)
	return max(0, (mrr-chance)/(1-chance))
}

// fit tests the embedder on the directory: up to fitProbes memories
// (chosen by a hash of their path, so the same ones each time) are looked
// for by their description without its rarest word, by words and by
// vectors, and the vectors' mean reciprocal rank is compared with the
// words'. An embedder that cannot read these memories (another language,
// noise) finds them no better than chance and earns no trust here.
func (f *Finder) fit(ctx context.Context, snap *snapshot) (float64, error) {
	type probe struct {
		key, text string
		order     [32]byte
	}
	var all []probe
	for _, h := range snap.headers {
		if len(strings.Fields(h.Description)) >= 4 {
			all = append(all, probe{key: h.Filename, text: h.Description, order: sha256.Sum256([]byte(h.Filename))})
		}
	}
	if len(all) < minFitProbes {
		return 1, nil
	}
	slices.SortFunc(all, func(a, b probe) int { return bytes.Compare(a.order[:], b.order[:]) })
	var probes []probe
	for _, p := range all {
		if len(probes) == fitProbes {
			break
		}
		if text, ok := f.withoutRarestWord(p.text); ok {
			p.text = text
			probes = append(probes, p)
		}
	}
	if len(probes) < minFitProbes {
		return 1, nil
	}
	texts := make([]string, len(probes))
	for i, p := range probes {
		texts[i] = p.text
	}
	vecs, err := f.corpus.embedAux(ctx, texts)
	if err != nil {
		return 0, err
	}
	if err := f.corpus.embedPending(ctx); err != nil {
		return 0, err
	}
	var byWords, byVectors float64
	for i, p := range probes {
		for r, h := range f.corpus.search(p.text, 50, nil) {
			if h.Key == p.key {
				byWords += 1 / float64(r+1)
				break
			}
		}
		if r, ok := f.corpus.rankOf(vecs[i], p.key, 50); ok {
			byVectors += 1 / float64(r)
		}
	}
	if byWords == 0 {
		return max(0, min(1, byVectors/float64(len(probes))/goodFit)), nil
	}
	return max(0, min(1, byVectors/byWords/goodFit)), nil
}

// withoutRarestWord returns a description without its word held by the
// fewest memories (what words would find it by); false when it has fewer
// than four words.
func (f *Finder) withoutRarestWord(description string) (string, bool) {
	words := strings.Fields(description)
	if len(words) < 4 {
		return "", false
	}
	rarest, fewest := -1, math.MaxInt
	for i, w := range words {
		toks := lexical.Tokenize(w)
		if len(toks) == 0 {
			continue
		}
		if n := f.corpus.index.DocFreq(toks[0]); n > 0 && n < fewest {
			rarest, fewest = i, n
		}
	}
	if rarest < 0 {
		return "", false
	}
	return strings.Join(slices.Delete(words, rarest, rarest+1), " "), true
}
