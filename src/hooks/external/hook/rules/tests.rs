use std::collections::BTreeSet;

use super::*;

#[test]
fn every_event_has_its_row_and_the_capabilities_are_the_rows_names() {
    for event in Event::ALL {
        assert_eq!(event.rules().event, event);
    }
    let named: BTreeSet<&str> = Change::ALL
        .iter()
        .filter(|change| **change != Change::Summary) // a `messages` change
        .map(|change| change.name())
        .chain([Addition::InjectMessages, Addition::AdditionalContext].map(Addition::name))
        .collect();
    assert_eq!(named, CAPABILITIES.into_iter().collect());
}

/// The backticked words of a table cell.
fn ticked(cell: &str) -> BTreeSet<&str> {
    cell.split('`').skip(1).step_by(2).collect()
}

/// docs/hooks.md's table of events: each row's cells.
fn documented() -> Vec<Vec<String>> {
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/hooks.md");
    let text = std::fs::read_to_string(file).unwrap();
    let table = text
        .split("\n| event (jcli format) |")
        .nth(1)
        .expect("docs/hooks.md has the table of events");
    table
        .lines()
        .skip(2) // the rest of the header and the rule under it
        .take_while(|line| line.starts_with('|'))
        .map(|line| {
            let cells = line.trim().trim_matches('|').split('|');
            cells.map(|cell| cell.trim().to_string()).collect()
        })
        .collect()
}

/// What a row's "may return" column names: the fields, and the decisions by their words.
fn may_return(cell: &str) -> (BTreeSet<&'static str>, [bool; 3]) {
    let vocabulary = Change::ALL
        .map(Change::name)
        .into_iter()
        .chain([Addition::InjectMessages, Addition::AdditionalContext].map(Addition::name))
        .chain(["retry_feedback"]);
    let words = ticked(cell);
    let fields = vocabulary
        .filter(|name| {
            words.contains(name) || (*name == "summary" && words.contains("summaryText"))
        })
        .collect();
    let says = |word: &str| {
        cell.split(|c: char| !c.is_alphanumeric())
            .any(|w| w == word)
    };
    (fields, [says("stop"), says("skip"), says("ask")])
}

/// The row of docs/hooks.md's table for each event hooks can be written for in YAML says what
/// the rules say: the fields it carries, those a hook may return, the decisions it may take.
#[test]
fn the_rules_are_the_documented_ones() {
    let rows = documented();
    for event in Event::ALL {
        if event == Event::Notification {
            continue; // Claude Code's and Gemini CLI's only: documented with their dialects
        }
        let row = rows
            .iter()
            .find(|row| {
                let names: BTreeSet<&str> =
                    ticked(&row[0]).union(&ticked(&row[1])).copied().collect();
                names.contains(event.as_str())
            })
            .unwrap_or_else(|| panic!("no row of docs/hooks.md for {}", event.as_str()));
        let rules = event.rules();
        // What the input carries, under its names in the native input.
        let input = |carried: &'static str| match carried {
            "tools" => Some("model_request"),
            "compaction" => Some("metadata"),
            "tool_call_id" => None, // Claude Code's `tool_use_id` only
            other => Some(other),
        };
        let carried: BTreeSet<&str> = rules.carries.iter().filter_map(|c| input(c)).collect();
        let all_carried = [
            "user_input",
            "messages",
            "system_prompt",
            "assistant_output",
            "tool_name",
            "tool_arguments",
            "tool_result",
            "tool_error",
            "error",
            "summary",
            "model_request",
            "metadata",
        ];
        let shown: BTreeSet<&str> = ticked(&row[3])
            .into_iter()
            .filter(|word| all_carried.contains(word))
            .collect();
        assert_eq!(shown, carried, "{}: input fields", event.as_str());
        let mut fields: BTreeSet<&str> = rules.changes.iter().map(|c| c.name()).collect();
        fields.extend(rules.adds.iter().map(|a| a.name()));
        if rules.decides.retry {
            fields.insert("retry_feedback");
        }
        let decides = &rules.decides;
        let decisions = [decides.stop, decides.skip.is_some(), decides.ask];
        assert_eq!(
            may_return(&row[4]),
            (fields, decisions),
            "{}: what a hook may return (fields; stop, skip, ask)",
            event.as_str()
        );
    }
}
