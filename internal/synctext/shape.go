package synctext

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"regexp"
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
	if err := walkValue(dec); err != nil {
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

// fieldName is a key shaped like a struct field's name (as against a
// memory's path or key, which holds a dot or a slash).
var fieldName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// walkValue reads one value, refusing an object that repeats a key.
func walkValue(dec *json.Decoder) error {
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
			if fieldName.MatchString(key) {
				// Go matches a struct's field names in any case:
				// "entries" and "Entries" fill one field.
				key = strings.ToLower(key)
			}
			if seen[key] {
				return ErrDuplicateKey
			}
			seen[key] = true
			if err := walkValue(dec); err != nil {
				return err
			}
		}
	case '[':
		for dec.More() {
			if err := walkValue(dec); err != nil {
				return err
			}
		}
	}
	_, err = dec.Token() // the closing delimiter
	return err
}
