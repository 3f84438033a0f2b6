package config

// TestedVersion is the version of a preset's CLI that the preset's flags,
// screen rules and usage parsing were measured against (docs/agents.md),
// that the integration tests drive and that the GitHub Action installs:
// the pin in scripts/versions.env, which a test holds this to. "" for a
// name that is no preset. walkie doctor can set what it finds beside it.
func TestedVersion(preset string) string {
	switch preset {
	case "claude":
		return "2.1.197"
	case "codex":
		return "0.171.0"
	case "gemini":
		return "0.61.0"
	}
	return ""
}
