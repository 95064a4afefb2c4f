"""The words the supersession rule (worker/memory/statement.py, supersession.py) reads: what negates,
what announces a change, what only names which one of several (environments, regions, labels),
what only relates a subject to its value, and the short forms compared as long ones. Lists to
extend, no logic.
"""

from __future__ import annotations

from worker.memory.tags import word_set

NEGATIONS = word_set(
    "never don't dont doesn't isn't aren't wasn't won't can't cannot shouldn't mustn't "
    "without neither stop stopped disable disabled drop dropped avoid"
)
# "off" negates after these ("preview deployments are turned off", "switched off", "shut off").
OFF_VERBS = word_set("turn turned turns turning switch switched switches switching shut shuts")
# "not" negates a statement after an auxiliary ("do not deploy"); after a comma it only contrasts
# ("use pnpm, not npm"). "no" negates in "no longer" / "no more".
AUXILIARIES = word_set("do does did is are was were be must should can could will would may")
# Verbs that change an amount ("shortened to 15 minutes", "extended the timeout to 60 s"):
# change words and update cues both.
DEGREE_VERBS = word_set(
    "extend extended extends shorten shortened shortens lengthen lengthened reduce reduced "
    "reduces double doubled halve halved tighten tightened relax relaxed loosen loosened"
)
# Words that announce a change rather than name its subject (never keys).
CHANGE_WORDS = (
    word_set(
        "use uses using used now instead switch switched switching move moved moving migrate migrated "
        "migrating upgrade upgraded downgrade downgraded change changed replace replaced from to new "
        "old prefer preferred going forward anymore longer latest current currently going decided "
        "decide decision let's lets we our will shall should start started bump bumped raise raised "
        "lower lowered increase increased decrease decreased reverse reversed rename renamed remove "
        "removed deprecate deprecated retire retired rather chose choose set update updated turn "
        "turned turning shut"
    )
    | DEGREE_VERBS
)
# Words that date a statement ("last week", "since March"): neither subject nor value.
TIME_WORDS = word_set(
    "today yesterday tomorrow last next week weeks month months year years ago since recently "
    "january february march april may june july august september october november december"
)
# Cues that the newer text replaces something (a move, a switch, a retired value).
UPDATE_CUES = (
    word_set(
        "now instead switch switched switching move moved moving migrate migrated migrating upgrade "
        "upgraded downgrade downgraded change changed replace replaced bump bumped raise raised lower "
        "lowered increase increased decrease decreased reverse reversed rename renamed remove removed "
        "deprecate deprecated retire retired rather anymore longer dropped drop relocate relocated "
        "stop stopped disable disabled update updated"
    )
    | DEGREE_VERBS
)
# Cues that a thing changed place or means: only these let a new environment or region replace one.
MOVE_CUES = word_set(
    "move moved moving migrate migrated migrating switch switched switching change changed "
    "relocate relocated"
)
# Cues that announce a new version, which may bring other changes with it.
BUMP_CUES = word_set("upgrade upgraded bump bumped migrate migrated migrating downgrade downgraded")
# A value that only names which one of several: an environment, a region, or a label.
ENVIRONMENTS = word_set(
    "production prod staging stage dev development develop test tests testing qa uat local "
    "localhost ci preview sandbox demo canary beta"
)
# "test" names the environment in "in test", "test and prod"; a kind of test ("load test", "unit
# tests") or a part of one ("the test suite", "test files") after or before these.
TEST_WORDS = word_set("test tests testing")
TEST_PARTS = word_set(
    "suite suites case cases file files run runs runner runners fixture fixtures data coverage"
)
REGION_NAMES = word_set(
    "eastus eastus2 westus westus2 westus3 centralus northeurope westeurope uksouth ukwest "
    "frankfurt ireland virginia ohio oregon tokyo singapore sydney mumbai london paris emea apac "
    "eu us uk latam"
)
# Nouns after which a number or letter names one of a series, not a value ("suite A", "shard 2").
LABEL_NOUNS = word_set(
    "number no fact rule item step phase stage part section chapter suite variant shard worker "
    "queue tier option plan case group team cohort pool replica partition zone lane slot track "
    "round sprint issue ticket bug pr migration job instance"
)
# Numbers written as words are values too: "two approvals" -> "only one approval".
NUMBER_WORDS = word_set(
    "zero one two three four five six seven eight nine ten eleven twelve once twice thrice"
)
# Tools whose names are also common words, and the words that introduce them as a command.
COMMAND_WORDS = word_set("make")
COMMAND_INTRO = word_set("with by via run runs running use uses using then type")
# Passive verbs that say a thing is gone or renamed ("Sphinx was dropped", "X was renamed to Y"),
# after one of the PASSIVE auxiliaries.
REMOVALS = word_set("removed deleted dropped disabled archived retired renamed replaced")
# Words that say a decision was reversed ("Decision reversed: ...", "we scrapped the plan to ...").
REVERSALS = word_set(
    "reverse reversed reverses reversing overturn overturned overrule overruled scrap scrapped "
    "abandon abandoned revoke revoked rescind rescinded undo undid undone"
)
# Words that say a statement is a decision (of a memory not saved with the kind "decision").
DECISION_WORDS = word_set("decision decisions decide decided agreed chose chosen policy")
# Words that mark a thing as a former one ("the old search page was removed"): its removal says a
# current one exists, and nothing of what was said of that one ("the search page uses Algolia").
FORMER = word_set("old legacy former previous outdated")
# "stopped using X", "no longer use X", "quit using X": X is retired as after "instead of".
QUITTING = word_set("stop stopped stopping quit longer")
USING = word_set("use uses using")
# "since we ditched Pingdom", "we left Statuspage": what follows is retired.
LEAVING = word_set("left ditched dumped abandoned")
PASSIVE = word_set("was were is are been be got gets")
# Active verbs whose object is retired ("Biome replaced ESLint", "v2 supersedes the v1 client").
REPLACING = word_set("replace replaces replaced replacing supersede supersedes superseded")
PREPOSITIONS = word_set("to into in on onto at under")
# Words that name who holds a thing ("Priya owns ...", "the tech lead for ...", "ownership of
# ..."), and the verbs that hand it on ("took over", "handed over to"): neither is the subject.
ROLE_WORDS = word_set(
    "own owns owned owner owners ownership maintain maintains maintained maintainer maintainers "
    "lead leads tech-lead responsible on-call oncall steward"
)
HANDING_WORDS = word_set(
    "take takes took taken taking hand hands handed handing pass passes passed passing transfer "
    "transfers transferred reassign reassigns reassigned"
)
# Prepositions that say what a statement is for or of ("pinned for the network stack", "coverage
# of the billing module", "PayPal as a second option"): words after them scope the subject.
SCOPES = word_set("for of as per")
PLACES = PREPOSITIONS | word_set("is are was were from")
PLACE_CUES = word_set("move moved moving relocate relocated")
DETERMINERS = word_set("the our a an this that each every its their my your")
# Verbs that only relate a subject to its value ("runs on", "lives in"): a change of them is wording.
RELATION_VERBS = word_set(
    "run runs live lives sit sits go goes host hosted serve served store stored keep "
    "kept locate located point points come comes reside resides listen listens"
)

# Verb forms (never nouns in these forms) that relate a subject to where or what it is: "shipped
# to Papertrail" / "send our logs to Datadog" say the same of the subject, only the value changed.
RELATION_FORMS = word_set(
    "built shipped sent sends send pushed published publishes exposed documented tracked "
    "mapped maps called named generated handled managed served hosted stored located deployed "
    "done kept lives read"
)
# Short forms compared as their long forms: "max request body" is the "maximum request body".
ABBREVIATIONS = {
    "max": "maximum",
    "db": "database",
    "repo": "repository",
    "repos": "repositories",
    "config": "configuration",
    "env": "environment",
    "var": "variable",
    "vars": "variables",
    "dir": "directory",
    "k8s": "kubernetes",
    "dev": "development",
    "prod": "production",
    "auth": "authentication",
    "docs": "documentation",
    "doc": "documentation",
    "deps": "dependencies",
    "dep": "dependency",
    "pkg": "package",
    "pkgs": "packages",
    "msg": "message",
    "msgs": "messages",
    "img": "image",
    "imgs": "images",
    "infra": "infrastructure",
    "perf": "performance",
    "app": "application",
    "apps": "applications",
}
# Units after a number belong to its value: "7 days" -> "24 hours" changes one slot, not two.
TIME_UNITS = word_set(
    "ms millisecond milliseconds s second seconds sec secs minute minutes min mins h hr hrs hour "
    "hours day days week weeks month months year years"
)
SIZE_UNITS = word_set("kb mb gb tb kib mib gib byte bytes")
UNIT_WORDS = TIME_UNITS | SIZE_UNITS | word_set("percent requests characters chars lines items")
# Nouns that name a measure of their subject ("the webhook delivery timeout", "the upload cap"):
# a text may add one when it restates the subject's measure at another figure.
MEASURE_NOUNS = word_set(
    "limit cap timeout ttl lifetime retention expiry expiration size budget quota threshold "
    "floor ceiling maximum minimum interval window duration delay length"
)
