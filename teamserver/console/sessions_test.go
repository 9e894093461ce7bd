package console

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestSessionsExpireAndStayBounded(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newSessions(2)
	s.add(&session{id: "a", expires: now.Add(time.Hour)}, now)
	s.add(&session{id: "b", expires: now.Add(2 * time.Hour)}, now)
	s.add(&session{id: "c", expires: now.Add(3 * time.Hour)}, now)
	_, ok := s.get("a", now)
	assert.False(t, ok, "past the bound, the session that ends first is dropped")
	_, ok = s.get("c", now)
	assert.True(t, ok)
	_, ok = s.get("b", now.Add(2*time.Hour))
	assert.False(t, ok, "a session ends at its expiry")
	s.drop("c")
	_, ok = s.get("c", now)
	assert.False(t, ok)
	assert.Empty(t, s.m)
}

func TestSafeNextStaysInTheConsole(t *testing.T) {
	for in, want := range map[string]string{
		"/console/repos/acme/shop?type=user": "/console/repos/acme/shop?type=user",
		"https://evil.example/":              "/console/",
		"//evil.example/console/":            "/console/",
		"/console/\\evil":                    "/console/",
		"/consolex/":                         "/console/",
		"":                                   "/console/",
	} {
		assert.Equal(t, want, safeNext("/console", in), in)
	}
}
