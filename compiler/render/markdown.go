package render

import (
	"fmt"
	"io"
	"strings"

	"poolc.dev/poolc/internal/plural"
	"poolc.dev/poolc/pools"
)

// MarkdownLimit is the most characters a Markdown plan may take: code
// review systems refuse longer comments (65,536), less a margin.
const MarkdownLimit = 65000

// Markdown writes the plan for a pull-request comment: the summary first,
// then interruptions, lanes that cannot be placed, unserved aliases and
// steps that may have run in the open, and the steps and the state diff
// in collapsible sections. When the whole would
// pass MarkdownLimit, the state diff and then the steps are cut, with a
// note saying how much and where to see it all.
func Markdown(w io.Writer, p *pools.Plan) {
	var head strings.Builder
	fmt.Fprintf(&head, "### poolc plan: %s", p.Pool)
	if p.Profile != "" {
		fmt.Fprintf(&head, " (profile %s)", p.Profile)
	}
	fmt.Fprintf(&head, "\n\n**%s**\n", p.Summary())
	if len(p.Interruptions) > 0 {
		head.WriteString("\n> [!WARNING]\n> This plan interrupts service; `poolc apply` refuses it without `--allow-interruption`.\n")
		for _, in := range p.Interruptions {
			fmt.Fprintf(&head, "> - **%s** unserved for about %ss: %s\n", cell(in.Alias), pools.Num(in.Seconds), cell(in.Reason))
		}
	}
	if len(p.Unplaced) > 0 {
		head.WriteString("\n**Cannot place:**\n")
		for _, u := range p.Unplaced {
			lines := Unplaced(u)
			fmt.Fprintf(&head, "- %s\n", cell(lines[0]))
			for _, l := range lines[1:] {
				fmt.Fprintf(&head, "  - %s\n", cell(strings.TrimSpace(l)))
			}
		}
	}
	if len(p.Unserved) > 0 {
		head.WriteString("\n**Unserved aliases:**\n")
		for _, u := range p.Unserved {
			fmt.Fprintf(&head, "- %s: %s\n", cell(u.Alias), cell(u.Why))
		}
	}
	if len(p.TakenDown) > 0 {
		head.WriteString("\n**Taken as down:**\n")
		for _, t := range p.TakenDown {
			fmt.Fprintf(&head, "- %s\n", cell(t.String()))
		}
	}
	if len(p.MayHaveRun) > 0 {
		head.WriteString("\n> [!CAUTION]\n> The last apply was killed with steps in flight that may have run; check each on its target before applying.\n")
		for _, m := range p.MayHaveRun {
			fmt.Fprintf(&head, "> - `%s`: %s; %s\n", cell(m.Step), cell(m.Why()), cell(MayHaveRunOutcome(m)))
		}
	}

	rows := make([]string, len(p.Steps))
	for i, s := range p.Steps {
		after := ""
		if len(s.DependsOn) > 0 {
			after = "`" + strings.Join(s.DependsOn, "`, `") + "`"
		}
		rows[i] = fmt.Sprintf("| %s | `%s` | %s | %s |\n", s.Kind.Symbol(), cell(Title(p, s)), cell(s.Reason), after)
	}
	var diff []string
	if d := UnifiedDiff("current", "planned", StateText(p.Before), StateText(p.After)); d != "" {
		diff = strings.Split(strings.TrimSuffix(d, "\n"), "\n")
	}

	steps := func(rows []string, cut int) string {
		if len(p.Steps) == 0 {
			return ""
		}
		var b strings.Builder
		fmt.Fprintf(&b, "\n<details><summary>Steps (%d)</summary>\n\n| | step | why | after |\n|---|---|---|---|\n", len(p.Steps))
		for _, r := range rows {
			b.WriteString(r)
		}
		if cut > 0 {
			fmt.Fprintf(&b, "\n_%d more %s cut to fit a comment; run `poolc plan` or `poolc show` on the saved plan to see them all._\n", cut, plural.Noun(cut, "step"))
		}
		b.WriteString("\n</details>\n")
		return b.String()
	}
	diffSection := func(lines []string, cut int) string {
		if len(diff) == 0 {
			return ""
		}
		var b strings.Builder
		b.WriteString("\n<details><summary>State diff</summary>\n\n```diff\n")
		for _, l := range lines {
			b.WriteString(l)
			b.WriteByte('\n')
		}
		b.WriteString("```\n")
		if cut > 0 {
			fmt.Fprintf(&b, "\n_%d more %s of the state diff cut to fit a comment._\n", cut, plural.Noun(cut, "line"))
		}
		b.WriteString("\n</details>\n")
		return b.String()
	}

	keepRows, keepDiff := len(rows), len(diff)
	size := func() int {
		return head.Len() + len(steps(rows[:keepRows], len(rows)-keepRows)) + len(diffSection(diff[:keepDiff], len(diff)-keepDiff))
	}
	for size() > MarkdownLimit && keepDiff > 0 {
		keepDiff = max(0, keepDiff-max(1, (size()-MarkdownLimit)/40))
	}
	for size() > MarkdownLimit && keepRows > 0 {
		keepRows = max(0, keepRows-max(1, (size()-MarkdownLimit)/200))
	}
	io.WriteString(w, head.String())
	io.WriteString(w, steps(rows[:keepRows], len(rows)-keepRows))
	io.WriteString(w, diffSection(diff[:keepDiff], len(diff)-keepDiff))
}

// cell escapes text for a Markdown table cell or list item.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "<", "&lt;", ">", "&gt;").Replace(s)
}
