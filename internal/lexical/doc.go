// Package lexical is agentmem's text search: a tokenizer for memories and
// conversations (English stemming with the Snowball English stemmer,
// stopwords that include question words, code identifiers split into their
// parts, Chinese, Japanese and Korean as character pairs) and a BM25F
// index over three weighted fields (name, description, body) that takes
// additions, replacements and removals one document at a time.
//
// recall ranks memories with it; transcript search can use the same.
//
// # Concurrency
//
// Tokenize is safe for concurrent use. An *Index is safe for concurrent
// use: searches share a read lock, Put and Delete take the write lock.
package lexical
