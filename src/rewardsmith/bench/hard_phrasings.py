"""Phrasings of the hard routing slice (routing_hard.py), written for this bench.

Each table has a *fit* and an *eval* half with different wording, so a router fitted on
the fit half is scored on requests it has not seen phrased that way. None of them uses a
surface marker the main set relies on: no `\\boxed`, no `####`, no "translate" (or
"übersetze", "traduire", ...), no `English:` line labels, no "(A)"-style options.
"""

from __future__ import annotations

import re

Split = dict[str, tuple[str, ...]]

MATH_SUFFIXES: Split = {
    "eval": (
        "",
        "\n\nGive the exact value.",
        "\n\nShow your reasoning, then state the result on the last line.",
        " Respond with the final result only.",
    ),
    "fit": ("", "\n\nExplain briefly.", " What is the result?", "\n\nWork it out carefully."),
}
GSM8K_SUFFIXES: Split = {
    "eval": ("", " Explain your reasoning.", "\nReply with just the number.", " Think it through."),
    "fit": ("", " Show your steps.", "\nHow did you get it?"),
}
GSM8K_ENDINGS: Split = {
    "eval": ("\nSo the total is {n}.", "", "\nFinal: {n}", "\nThat gives {n} in the end."),
    "fit": ("\nThe answer is {n}.", "", "\n{n}"),
}

TRANSLATION_REQUESTS: Split = {
    "eval": (
        "{src}\n\nIn {tgt}, please.",
        "Could you put this into {tgt}?\n\n{src}",
        "{src}\n\nHow would you say that in {tgt}?",
        "Give me the {tgt} version of this sentence: {src}",
        "{tgt} please: {src}",
        "I need this in {tgt} for a colleague:\n\n{src}",
    ),
    "fit": (
        "{src}\n\nRender this in {tgt}.",
        "What is this in {tgt}? {src}",
        "Convert the following into {tgt}:\n{src}",
        "{src}\n-> {tgt}",
        "Write this in {tgt}: {src}",
    ),
}
# Requests written in another language: (language of the request, target language).
NATIVE_REQUESTS: dict[str, dict[tuple[str, str], str]] = {
    "eval": {
        ("de", "en"): "Bitte auf Englisch:\n\n{src}",
        ("de", "de"): "Wie sagt man das auf Deutsch?\n\n{src}",
        ("fr", "en"): "En anglais, s'il vous plaît :\n{src}",
        ("fr", "fr"): "Comment dit-on ceci en français ? {src}",
        ("es", "en"): "¿Cómo se dice esto en inglés?\n{src}",
        ("es", "es"): "Dímelo en español: {src}",
        ("it", "en"): "Come si dice in inglese? {src}",
        ("pt", "en"): "Como se diz isto em inglês? {src}",
        ("nl", "en"): "Hoe zeg je dit in het Engels? {src}",
        ("zh", "en"): "这句话用英语怎么说：{src}",
        ("ja", "en"): "これを英語で言うと？ {src}",
    },
    "fit": {
        ("de", "en"): "Auf Englisch, bitte: {src}",
        ("de", "de"): "Das bitte auf Deutsch: {src}",
        ("fr", "en"): "Dites-le en anglais : {src}",
        ("es", "en"): "En inglés, por favor: {src}",
        ("it", "it"): "In italiano, per favore: {src}",
        ("ru", "en"): "Как это сказать по-английски? {src}",
    },
}

STYLE_LABELS: dict[str, tuple[str, ...]] = {
    "upper": ("A", "B", "C", "D"),
    "lower": ("a", "b", "c", "d"),
    "digit": ("1", "2", "3", "4"),
    "roman": ("i", "ii", "iii", "iv"),
}
LETTER_STYLES: dict[str, tuple[dict[str, str], ...]] = {
    "eval": (
        {
            "labels": "lower",
            "item": "{label}) {option}",
            "join": "\n",
            "frame": "{question}\n\n{options}",
            "reference": "{label}",
        },
        {
            "labels": "upper",
            "item": "[{label}] {option}",
            "join": "  ",
            "frame": "{question}\nPick one: {options}",
            "reference": "{label}",
        },
        {
            "labels": "upper",
            "item": "Option {label}: {option}",
            "join": "\n",
            "frame": "{question}\n{options}",
            "reference": "{label}) {option}",
        },
        {
            "labels": "lower",
            "item": "({label}) {option}",
            "join": "; ",
            "frame": "{question} Is it {options}?",
            "reference": "({label})",
        },
    ),
    "fit": (
        {
            "labels": "upper",
            "item": "{label}. {option}",
            "join": "\n",
            "frame": "{question}\n{options}\nWhich one?",
            "reference": "{label}",
        },
        {
            "labels": "lower",
            "item": "{label}. {option}",
            "join": "\n",
            "frame": "{question}\n\n{options}",
            "reference": "{label}",
        },
        {
            "labels": "upper",
            "item": "{label}: {option}",
            "join": "\n",
            "frame": "Question: {question}\n{options}",
            "reference": "{label}. {option}",
        },
    ),
}
INDEX_STYLES: dict[str, tuple[dict[str, str], ...]] = {
    "eval": (
        {"labels": "digit", "item": "{label}) {option}", "join": "\n", "frame": "{question}\n{options}"},
        {"labels": "roman", "item": "({label}) {option}", "join": " ", "frame": "{question} {options}"},
    ),
    "fit": (
        {"labels": "digit", "item": "({label}) {option}", "join": "\n", "frame": "{question}\n{options}"},
        {"labels": "roman", "item": "{label}. {option}", "join": "\n", "frame": "{question}\n{options}"},
    ),
}  # fmt: skip
CHOICE_COMPLETIONS = (
    "Working it out, the right one is {label}.",
    "{label}",
    "I'd go with {label}) since the numbers add up.",
    "Answer: {label}",
)
PAIR_FRAMES: Split = {
    "eval": (
        "Here is a request and two replies.\n\nRequest: {instruction}\n\nReply (a): {first}\n\n"
        "Reply (b): {second}\n\nWhich reply is better?",
        "{instruction}\n\n[a] {first}\n[b] {second}\n\nWhich of the two does the job?",
    ),
    "fit": (
        "Task: {instruction}\n\na) {first}\n\nb) {second}\n\nPick the stronger answer.",
        'Compare these responses to "{instruction}":\n(a) {first}\n(b) {second}',
    ),
}

# Words a keyword router takes for a task: open-ended requests that contain them.
TASK_WORDS = re.compile(
    r"\b(translat\w*|answers?|solv\w*|calculat\w*|choos\w*|options?|equations?|convert\w*|"
    r"math\w*|numbers?|compute|letters?)\b",
    re.IGNORECASE,
)
OPEN_PROMPTS: dict[str, tuple[tuple[str, str], ...]] = {
    "eval": (
        ("How can I translate a business idea into a concrete plan?",
         "Write down the problem it solves, who pays, and the first three steps to test it."),
        ("What's the best way to translate customer feedback into product features?",
         "Group the feedback by problem, count how often each appears, then design for the top ones."),
        ("I think the answer is to ask my manager for more help. Is that a good idea?",
         "Yes, if you come with a specific request and a proposal for what would change."),
        ("The answer is to ask, right? How do I ask my landlord to fix the heating?",
         "Put the request in writing, describe the problem and when it started, and propose a date."),
        ("Can you help me solve the problem of always being late to meetings?",
         "Set reminders ten minutes early, leave buffers between meetings and plan the route."),
        ("Calculate how much I should save each month? Just give me general principles.",
         "Start with an emergency fund of three months of costs, then save a fixed share of income."),
        ("Choose a name for my bakery and explain why you picked it.",
         "Crumb and Co.: short, warm, and easy to remember on a sign."),
        ("What are my options if my flight gets cancelled?",
         "You can rebook on the next flight, ask for a refund, or claim compensation depending on the cause."),
        ("Help me convert my messy notes into a clear summary for my team.",
         "Start with the decision, list the open questions, then assign each task an owner."),
        ("Why do so many people hate math at school?",
         "Often because it is taught as rules to memorize rather than ideas to explore."),
        ("Write a short poem where the word 'answer' appears in every stanza.",
         "I asked the sea, it gave no answer; I asked the wind, it gave no answer."),
        ("How do I translate my research findings into a story for a general audience?",
         "Lead with why it matters, use one concrete example, and leave out the jargon."),
        ("Is there a formula for happiness, or is that the wrong question?",
         "There is no formula, but sleep, friends and meaningful work come up again and again."),
        ("My teenager keeps choosing the wrong friends. How should I talk to her about it?",
         "Ask about the friends with curiosity rather than judgment and share your worries calmly."),
        ("Explain in simple words why the number of bees is going down.",
         "Pesticides, disease and fewer wild flowers all make it harder for bees to survive."),
        ("Which of these is the best option for a first pet: a cat, a dog or a fish?",
         "A fish needs the least time, a cat is independent, and a dog needs the most care."),
        ("What letters should I write to thank my mentors after graduating?",
         "A short personal note to each one, naming one thing they taught you."),
        ("Can you compute a rough budget for a week in Lisbon? Just the categories.",
         "Lodging, food, transport, museums and a little extra for surprises."),
        ("How do I solve a conflict between two people on my team?",
         "Talk to each one alone, then together, and agree on what each will do differently."),
        ("Suggest a better answer to the interview question 'what is your biggest weakness'.",
         "Name a real weakness that is not central to the job and show what you do about it."),
    ),
    "fit": (
        ("How do I translate my passion for cooking into a side business?",
         "Start small with a weekly market stall and learn what people buy again."),
        ("Is the answer to burnout just taking a vacation?",
         "A break helps, but lasting change needs fewer demands or more control over work."),
        ("Help me solve a scheduling puzzle: my kids have too many activities.",
         "Keep one activity each that they love and drop the rest for a term."),
        ("Choose three books for a beach holiday and say why.",
         "A thriller for the flight, a light novel for the sun, and a travel memoir."),
        ("What options do I have for learning to code at 40?",
         "Online courses, local bootcamps, or building a small project with a friend."),
        ("Convert my rambling email into something polite and short.",
         "Thank them, state the request in one sentence, and give a deadline."),
        ("Calculate the pros and cons of moving to the countryside for me.",
         "More space and calm, but longer commutes and fewer services nearby."),
        ("What is the answer to life, the universe and everything, philosophically speaking?",
         "Many philosophers would say meaning is made, not found."),
        ("Why are some numbers considered lucky in different cultures?",
         "Often because of how their names sound, like eight in Chinese sounding like wealth."),
        ("Can you translate this feeling into words: I'm happy but also scared.",
         "It sounds like excited anticipation: joy about what is coming mixed with fear of losing it."),
        ("Give me tips to pick the right option when buying a used car.",
         "Check the service history, take a test drive, and have a mechanic inspect it."),
        ("Tell me how mathematicians think about infinity in a friendly way.",
         "They compare sizes of infinite sets by matching elements one to one."),
        ("How can I calculate less and enjoy shopping more?",
         "Set a budget before you go and then stop tracking every small purchase."),
        ("Write a letter to my future self about choosing kindness.",
         "Dear me, remember that kindness was always the choice you never regretted."),
    ),
}  # fmt: skip

JSON_INSTRUCTIONS: Split = {
    "eval": (' Reply as JSON: {"answer": ...}', "\nReturn a JSON object with the result."),
    "fit": ("\nFormat the output as JSON.", ' Answer in JSON with the key "answer".'),
}
JSON_RECORDS: dict[str, tuple[tuple[str, str], ...]] = {
    "eval": (
        ("What is the capital of France? Reply in JSON.", '{"answer": "Paris"}'),
        ("Extract the name and age: 'Maria, 34, lives in Porto.' Return JSON.",
         '{"name": "Maria", "age": 34}'),
        ("Classify the sentiment of 'I loved every minute of it' as JSON.",
         '{"sentiment": "positive"}'),
        ("List the primary colors as a JSON array.", '["red", "yellow", "blue"]'),
        ("Give the chemical symbol of gold as JSON.", '{"answer": "Au"}'),
        ("Parse this date into JSON with year, month and day: 3 March 2021.",
         '{"year": 2021, "month": 3, "day": 3}'),
        ("Who wrote Hamlet? Respond with a JSON object.", '{"answer": "William Shakespeare"}'),
        ("Return the cities in this text as JSON: 'We flew from Oslo to Rome via Zurich.'",
         '{"cities": ["Oslo", "Rome", "Zurich"]}'),
        ("Turn this into a JSON record: title 'Dune', author 'Frank Herbert', year 1965.",
         '{"title": "Dune", "author": "Frank Herbert", "year": 1965}'),
        ("What is the boiling point of water at sea level? Answer as JSON with units.",
         '{"value": 100, "unit": "C"}'),
    ),
    "fit": (
        ("Name the largest planet. Output JSON.", '{"answer": "Jupiter"}'),
        ("Extract the email from 'contact: jo@example.org' as JSON.", '{"email": "jo@example.org"}'),
        ("Tag the language of 'Guten Morgen' in JSON.", '{"language": "German"}'),
        ("Give three fruits as a JSON list.", '["apple", "pear", "plum"]'),
        ("What year did the Berlin Wall fall? JSON please.", '{"answer": 1989}'),
        ("Put the product and price into JSON: 'Lamp - 25 EUR'.", '{"product": "Lamp", "price": 25}'),
    ),
}  # fmt: skip
