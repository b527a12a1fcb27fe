package cli

import "github.com/agent-sandbox/agent-sandbox/internal/suggest"

// suggestOf is ` (did you mean "X"?)` for the closest of choices to s, or "".
func suggestOf(s string, choices []string) string { return suggest.Phrase(s, choices) }
