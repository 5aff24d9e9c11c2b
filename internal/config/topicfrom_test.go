package config

import (
	"regexp"
	"strings"
	"testing"
)

// kafkaTopicRe is Kafka's legal-name pattern (Topic.LEGAL_CHARS) with its
// length bound, the oracle of TopicNameProblem.
var kafkaTopicRe = regexp.MustCompile(`^[a-zA-Z0-9._-]+$`)

func kafkaValid(s string) bool {
	return s != "" && s != "." && s != ".." && len(s) <= 249 && kafkaTopicRe.MatchString(s)
}

// FuzzTopicNameProblem holds TopicNameProblem to Kafka's rule: valid
// exactly when the oracle says so, and a reason whenever it is not.
func FuzzTopicNameProblem(f *testing.F) {
	for _, s := range []string{"", ".", "..", "...", "logs.web", "a b", "é", "a/b", strings.Repeat("x", 249), strings.Repeat("x", 250), "_-.", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p := TopicNameProblem(s)
		if (p == "") != kafkaValid(s) {
			t.Fatalf("TopicNameProblem(%q) = %q, Kafka says valid=%v", s, p, kafkaValid(s))
		}
	})
}

func TestTopicAllow(t *testing.T) {
	a, err := NewTopicAllow([]string{"logs.*", "audit-?"}, `tenant\.[a-z]+\.events`)
	if err != nil {
		t.Fatal(err)
	}
	for topic, want := range map[string]bool{
		"logs.web": true, "logs.": true, "logs": false, "xlogs.web": false,
		"audit-1": true, "audit-12": false,
		"tenant.acme.events": true, "tenant.acme.events.x": false, "x.tenant.acme.events": false, "tenant.ACME.events": false,
	} {
		if got := a.Allows(topic); got != want {
			t.Errorf("Allows(%q) = %v, want %v", topic, got, want)
		}
	}
	if _, err := NewTopicAllow(nil, ""); err == nil {
		t.Error("an empty allow-list compiled")
	}
}
