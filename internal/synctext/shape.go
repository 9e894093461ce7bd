package synctext

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
)

// ErrDuplicateKey and ErrTrailingData refuse a request body that two
// JSON readers could read differently (a parser differential: a proxy,
// a log or another client may take the first of two equal keys, Go takes
// the last; another reader may take the data after the value).
var (
	ErrDuplicateKey = errors.New("the request body names one key twice in an object; send each key once")
	ErrTrailingData = errors.New("the request body has data after its JSON value; send one JSON value")
)

// CheckJSONShape returns ErrDuplicateKey or ErrTrailingData for a body
// whose meaning depends on the reader, and nil otherwise (a body that is
// not JSON at all is left for the decoder to report).
func CheckJSONShape(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := walkValue(dec, true); err != nil {
		if errors.Is(err, ErrDuplicateKey) {
			return err
		}
		return nil
	}
	if _, err := dec.Token(); err != io.EOF {
		return ErrTrailingData
	}
	return nil
}

// mapFields are the fields whose object is a map of the user's names
// (team keys, a memory's metadata), matched exactly, where every other
// object is a struct whose field names Go matches in any case.
var mapFields = map[string]bool{"entries": true, "metadata": true}

// walkValue reads one value, refusing an object that repeats a key: in
// any case when fields is set (a struct), exactly in a map.
func walkValue(dec *json.Decoder, fields bool) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	d, ok := t.(json.Delim)
	if !ok {
		return nil
	}
	switch d {
	case '{':
		seen := map[string]bool{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ := k.(string)
			if fields {
				// "entries" and "Entries" fill one field.
				key = strings.ToLower(key)
			}
			if seen[key] {
				return ErrDuplicateKey
			}
			seen[key] = true
			if err := walkValue(dec, !(fields && mapFields[key])); err != nil {
				return err
			}
		}
	case '[':
		for dec.More() {
			if err := walkValue(dec, true); err != nil {
				return err
			}
		}
	}
	_, err = dec.Token() // the closing delimiter
	return err
}
