"""Exemplar prompts of the built-in tools: what the router compares a new prompt with.

Each is a prompt the tool grades well, written for this file (not copied from the bench's
evaluation data), in several phrasings. A tool added later brings its own exemplars in its
`ToolSpec`; `rewardsmith route fit` adds learned ones to the library.
"""

from __future__ import annotations

MATH = (
    "Find the value of x such that ... Put your final answer in \\boxed{}.",
    "Let $f(x) = 3x^2 - 5x + 2$. Find $f(4)$.",
    "Compute $\\dbinom{10}{3}$.",
    "What is the smallest positive integer $n$ such that $n^2 \\equiv 1 \\pmod{15}$ and $n > 1$?",
    "Simplify $\\sqrt{50} + \\sqrt{18}$. Express your answer in simplest radical form.",
    "Find all real solutions to $x^3 - 6x^2 + 11x - 6 = 0$. Enter all the solutions, "
    "separated by commas.",
    "In triangle $ABC$, $AB = 5$, $BC = 12$ and $\\angle B = 90^\\circ$. What is $AC$?",
    "How many positive divisors does 3600 have?",
    "The sum of an infinite geometric series is 12 and its first term is 4. What is the "
    "common ratio? Express your answer as a common fraction.",
    "Problem: Evaluate $\\log_2 64 - \\log_3 27$.\nSolution:",
    "Solve the following math problem step by step. The last line of your response should "
    "be of the form Answer: $ANSWER. Find the area of the region bounded by $y = |x|$ and "
    "$y = 4$.",
    "Let $a$ and $b$ be real numbers with $a + b = 7$ and $ab = 10$. Find $a^3 + b^3$.",
    "Determine the number of ways to arrange the letters of the word ELEVEN.",
    "If $\\mathbf{v} = \\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}$, find the projection of "
    "$\\mathbf{v}$ onto $\\begin{pmatrix} 3 \\\\ 4 \\end{pmatrix}$.",
    "Find the remainder when $2^{100}$ is divided by 7.",
    # the same kind of problems typed without LaTeX
    "How many positive integers less than 200 are divisible by 3 or by 7?",
    "In how many ways can the letters of the word BANANA be arranged?",
    "What is the sum of the digits of 2 to the power 15?",
    "A right triangle has legs of length 9 and 12. What is the radius of its inscribed circle?",
    "If x + 1/x = 5, what is x^2 + 1/x^2?",
    "What is the greatest common divisor of 1071 and 462?",
    "A point is chosen at random inside a square of side 2. What is the probability that it "
    "lies within 1 unit of the center? Express your answer in terms of $\\pi$.",
)

GSM8K = (
    "Natalia sold clips to 48 of her friends in April ... How many clips?",
    "Tom has 3 boxes with 12 apples each. He gives away 7 apples. How many apples does he "
    "have left?",
    "A bakery sells cupcakes for $2 each. On Monday it sold 45 cupcakes and on Tuesday twice "
    "as many. How much money did it make over the two days?",
    "Sara walks 2 miles every morning and 3 miles every evening. How many miles does she walk "
    "in a week?",
    "A farmer has 120 chickens. He sells a quarter of them and buys 15 more. How many "
    "chickens does he have now?",
    "Question: Jake earns $15 an hour and works 8 hours a day, 5 days a week. How much does "
    "he earn in 4 weeks?\nAnswer:",
    "Solve this word problem and give the final number after ####: Maria bought 3 notebooks "
    "at $4 each and a pen for $2. She paid with a $20 bill. How much change did she get?",
    "The school library has 350 books. 40% are fiction. How many books are not fiction?",
    "John is twice as old as his sister. In 5 years the sum of their ages will be 40. How old "
    "is John now?",
    "A car travels 60 miles per hour for 2.5 hours. How far does it go? Let's think step by step.",
    "Emma reads 20 pages a day. Her book has 300 pages and she has read 80 so far. How many "
    "more days does she need to finish it?",
    "There are 24 students in a class. One third of them bring lunch from home and the rest "
    "buy lunch. How many students buy lunch?",
)

FORMAT_TAGS = (
    "Think step by step inside <thinking></thinking>, then give only the final answer inside "
    "<solution></solution>.",
    "Answer the question. Put your reasoning in <thinking>...</thinking> tags and the final "
    "answer in <solution>...</solution> tags.",
    "Respond in the format <thinking> your reasoning </thinking> <solution> your answer "
    "</solution>.",
    "First reason inside <thinking> tags, then write the answer inside <solution> tags.",
)

THINK_FORMAT = (
    "Think inside <think></think> before answering, then give the answer.",
    "Reason step by step within <think> ... </think>, then write your final answer after the "
    "closing tag.",
    "Start your reply with your private reasoning in <think></think> tags followed by the answer.",
)

MULTIPLE_CHOICE = (
    "Which of the following ... (A) ... (B) ... (C) ... (D) ...",
    "Which of the following is a prime number?\n(A) 21\n(B) 27\n(C) 29\n(D) 33\nAnswer with "
    "the letter.",
    "Question: What is the capital of Australia?\nA. Sydney\nB. Melbourne\nC. Canberra\nD. "
    "Perth\nAnswer:",
    "Which output better follows the instruction?\n\nInstruction:\nWrite a haiku about "
    "autumn.\n\n(A) ...\n\n(B) ...\n\nAnswer with (A) or (B).",
    "Choose the correct option. The chemical symbol for gold is: (A) Ag (B) Au (C) Gd (D) Go",
    "Read the passage and answer the multiple-choice question. Reply with the letter of the "
    "correct answer only.",
    "Which response is better? Output (A) or Output (B). Respond with A or B.",
    "The answer is one of A, B, C or D. Which statement about photosynthesis is true?",
)

TRANSLATION = (
    "Translate the following German text into English: ...",
    "Translate to English: Der Zug nach Berlin hat heute zwanzig Minuten Verspätung.",
    "Translate to German: The museum will be closed on Monday for renovation.",
    "Translate this sentence from French to English: Le chat dort sur le canapé.",
    "Übersetze ins Deutsche: The weather will improve over the weekend.",
    "Please translate into Spanish: I would like to book a table for two.",
    "English: The committee approved the budget yesterday.\nGerman:",
    "Render the following English paragraph in German, keeping the meaning and tone.",
    "Translate the source sentence into English.\nSource (de): Die Regierung plant neue "
    "Gesetze zum Klimaschutz.",
)

REASONING_GYM = (
    "Calculate 58 * 23 - 17.",
    'How many times does the letter "e" appear in the text: "never ever settle"?',
    "Sort these numbers in ascending order: 42, 7, 19, 3.",
    "Solve this Sudoku puzzle. Give your answer inside <answer></answer> tags.",
    "What is the next term in the sequence 2, 6, 12, 20, ...?",
    "Given the following family relationships, who is Alice's grandmother?",
)
