// Package recall picks, for each user message, the few saved memories
// worth putting in front of the model, and applies the per-conversation
// rules for surfacing them.
//
// A Finder keeps the memory directory indexed (package lexical: BM25F
// over name, description and body, Snowball stemming, question words
// dropped, code identifiers split, Chinese, Japanese and Korean as
// character pairs). A Find on an unchanged directory does not walk it: on
// the real disk the Finder watches its folders for change notices
// (fsnotify) and stats each folder (a file added, removed or renamed moves
// its folder's mtime), and walks only when either says something changed,
// when a folder changed within the last 2 s, or when FullWalkEvery (30 s)
// has passed since the last walk; a walk re-reads only the files whose
// size or mtime changed and drops removed ones. On other filesystems every
// Find walks. Then it drops memories already surfaced and picks up to
// five. Close releases the watcher.
//
// Candidates are chosen by relevance over every memory (ByRelevance, the
// default): the lexical selection (no model needed, the default) picks
// straight from the ranking of the whole directory; a ModelSelector (a
// model with structured JSON output) is offered the 200 lexically best.
// Claude Code's rule, the 200 newest memories only, is FinderOptions
// Candidates: Newest. The lexical selection returns nothing only when the
// best match holds one word of the message, weakly, and that word is not
// a subject of the directory (LexicalOptions, calibrated on the messages
// of testdata/recall/shop.json that need no memory), unless that word is a
// name (capitalized inside a sentence) that at most three memories hold;
// in a directory of fewer than 20 memories one word needs less strength
// (a third of it for one memory), so a newcomer's first memory is found;
// otherwise it returns up to five, dropping those under a fifth of the
// best score; Event.Why says what held back an empty selection.
// Among close scores newer memories rank first (up to 10% more score for
// the newest), a newer memory on the same subject (lexical.SameSubject),
// or one that names at least half of an older one's values (terms at
// most three memories hold) and says something changed ("left",
// "moved", "no longer", ...), goes before the one it replaced, and a
// chosen memory's [[name]] links
// fill free slots when they match the message too. Names a selector
// invents are dropped. Find never fails: an error yields no memories and
// an Event that carries it, and every selection emits an Event with its
// candidate and selected counts.
//
// With FinderOptions.Embedder the lexical selection is hybrid, and an
// embedder that knows nothing costs nothing. The cosines of the message's
// embedding to every memory's are the background; a memory is found by
// meaning only when its cosine stands out above the background's median
// by more than the largest of that many noise draws would, except with
// probability 1% per message (spread estimated robustly; see
// FinderOptions.Embedder). When none stands out (equal or zero vectors,
// random vectors, an embedder that does not separate these texts, a
// sparse one under which most memories are exactly as similar as each
// other) the vector side abstains and the selection is the lexical one,
// whole. For a memory words found too (every memory the words match, not
// only the first hundred), only what its word score does not predict
// counts (a line fitted through every memory's word score and z-score,
// when words found ten or more), and only when that stands out from what
// the line leaves of the other word-found memories, so an embedder that
// knows words, or weighs them otherwise, does not count them twice. A
// memory found by meaning scores its confidence
// (0 to 1) times FinderOptions.VectorWeight on top of its share of the
// best word match: it comes in for a weaker word match it beats, moves up
// a word match it confirms, and never displaces the best word match. Supersession looks
// only at memories words found or meaning found with confidence.
//
// How much the vector side may speak is earned, per directory (Trust,
// reported in Event.Trust): Meaning is how well the embedder pairs 24
// questions with statements that share no word with them (chance 0, all
// first 1), which an embedder that knows only words or nothing cannot
// do; Fit is how well it finds up to 32 of the directory's own memories
// for their description without its rarest word, against words (full at
// 70% of the words' rank quality). Their product sets the false-alarm
// rate between 1% and 50% and the weight between 1 and 4 times
// VectorWeight; an embedder that earns nothing is held to the rules
// above. When words find nothing to answer, meaning is held to 1% alone.
// The test is embedded once per Finder (48 texts; kept in the vector
// cache for an embedder with an EmbedderID), the fit again when the
// directory's size moves by a tenth. An embedder that earned trust looks,
// for a message that gives names (a capitalized word inside a sentence:
// a person, a place, a product), only among the memories that hold one
// of them when those are 20 or more and at most half the directory (one
// directory many people share: a memory alike in meaning about someone
// else is no answer).
// CompareEmbedder measures recall@k with and without an embedder on
// labelled questions; ControlEmbedder gives embedders that know nothing,
// to see that they cost nothing. Embeddings are cached by the hash of
// the text embedded, computed in batches of 64 and kept as int8
// unit vectors. A failing embedder leaves that Find to words alone
// (Event.EmbedErr).
//
// Measured with examples/recalleval, with minisearch in the same run
// (docs/performance.md, "How well recall works"): recall@5 is 0.64 per conversation
// and 0.64 merged on the conversational set (minisearch 0.57 and 0.56),
// 0.65 per user and 0.60 merged on the knowledge-update set (minisearch
// 0.63 and 0.62), and 0.37 on that set's questions for a current value
// (minisearch 0.40).
//
// A Session wraps a Finder with the rules of one conversation: skip
// one-word messages, never surface a file twice or one the conversation
// already read (MarkRead), stop after 60 KiB, cut each file at 200 lines
// or 4,096 bytes with a note, and head each with a freshness line
// (memdir.MemoryHeaderLine). Reset it when the conversation is compacted.
// RecentTools computes the tools in active use from the messages.
//
// # Concurrency
//
// Finder, Session and LexicalSelector are safe for concurrent use. A
// Finder's memory is bounded: at most 100,000 files (the newest),
// 16 KiB of each.
package recall
