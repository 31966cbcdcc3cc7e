/* demo_vocab.c — deterministic vocabularies in the real GGUF tokenizer format (SentencePiece
 * "llama" and byte-level BPE "gpt2"), trained by a tiny BPE trainer over the text below.
 * Not a general trainer: no normalization, approximate pre-splitting, quadratic-ish loops
 * that are fine for a few thousand merges (beyond the text, merges are synthetic).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demo_vocab.h"

/* Original text written for plumb: English prose, numbers, code, a table, seven other
 * languages and emoji, so that the merges cover what tests and demos tokenize. */
static const char corpus[] =
    "The river starts in the hills above the town, where the snow melts in spring and the water "
    "runs cold and clear over the stones. By the time it reaches the old mill it is wide enough "
    "for a small boat, and the children who live along the bank learn to swim in the deep pool "
    "under the bridge. In summer the water is warm and slow; in winter it freezes at the edges and "
    "the ducks gather in the middle, where the current keeps it open.\n"
    "\n"
    "Nobody remembers who built the mill. The records in the town hall say that it was already old "
    "in 1743, when a flood carried away the wheel and the miller's family rebuilt it with oak from "
    "the forest to the north. The new wheel turned for almost two hundred years. Today the "
    "building is a small museum, and on Sunday afternoons a volunteer named Anna opens the doors, "
    "makes tea, and tells visitors how flour was ground before there were engines.\n"
    "\n"
    "\"It's simpler than people think,\" she says. \"Water turns the wheel, the wheel turns the "
    "stone, and the stone crushes the grain. What's hard is keeping everything in balance. If the "
    "stones are too close, they burn the flour. If they're too far apart, nothing happens at "
    "all.\" She's been doing this for twelve years, and she doesn't plan to stop. \"I'll stay as "
    "long as the roof holds,\" she laughs. \"We've fixed it three times already.\"\n"
    "\n"
    "A good tool does one thing well and tells you clearly when it cannot. A bad tool guesses, and "
    "when the guess is wrong you find out much later, far from the place where the mistake was "
    "made. Engineers learn this the slow way. They write a parser that accepts almost anything, "
    "and a year later they spend a week tracing a crash back to a file that should have been "
    "rejected on the first line. The lesson is always the same: check the input, name what was "
    "wrong, and stop.\n"
    "\n"
    "Numbers matter too. The model has 32 layers, 4096 hidden units, and a context of 8192 tokens; "
    "at 16 bits per weight it needs about 13.5 GB, while at 4 bits it fits in 3.9 GB. On a laptop "
    "with 16 GB of memory that difference decides whether it runs at all. Prices went from $19.99 "
    "to $24.50 in March 2024, an increase of 22.6%. Call 555-0142 or write to info@example.org "
    "before 5:30 pm.\n"
    "\n"
    "Questions and answers:\n"
    "Q: What's the capital of France? A: Paris.\n"
    "Q: How many days are in a leap year? A: 366.\n"
    "Q: Who wrote the first compiler? A: It depends on what you count as a compiler.\n"
    "\n"
    "    // Sum the squares of the first n integers.\n"
    "    #include <stdio.h>\n"
    "\n"
    "    static long sum_squares(int n)\n"
    "    {\n"
    "        long total = 0;\n"
    "        for (int i = 1; i <= n; i++) {\n"
    "            total += (long)i * i;\n"
    "        }\n"
    "        return total;\n"
    "    }\n"
    "\n"
    "    int main(void)\n"
    "    {\n"
    "        printf(\"%ld\\n\", sum_squares(10));\n"
    "        return 0;\n"
    "    }\n"
    "\n"
    "def tokenize(text, vocab):\n"
    "    \"\"\"Split text into the longest known pieces, left to right.\"\"\"\n"
    "    pieces = []\n"
    "    i = 0\n"
    "    while i < len(text):\n"
    "        for j in range(len(text), i, -1):\n"
    "            if text[i:j] in vocab:\n"
    "                pieces.append(text[i:j])\n"
    "                i = j\n"
    "                break\n"
    "        else:\n"
    "            pieces.append(text[i])\n"
    "            i += 1\n"
    "    return pieces\n"
    "\n"
    "if __name__ == \"__main__\":\n"
    "    print(tokenize(\"hello world\", {\"hello\", \" \", \"world\", \"he\", \"llo\"}))\n"
    "\n"
    "| name    | value | unit |\n"
    "|---------|-------|------|\n"
    "| speed   | 12.5  | km/h |\n"
    "| weight  | 80    | kg   |\n"
    "\n"
    "Der Fluss beginnt in den Bergen oberhalb der Stadt. Im Frühling schmilzt der Schnee, und das "
    "Wasser läuft kalt und klar über die Steine. Die Kinder lernen im tiefen Becken unter der "
    "Brücke schwimmen.\n"
    "\n"
    "La rivière prend sa source dans les collines au-dessus de la ville. Au printemps, la neige "
    "fond et l'eau coule, froide et claire, sur les pierres. Les enfants apprennent à nager sous "
    "le pont.\n"
    "\n"
    "El río nace en las colinas que hay sobre el pueblo. En primavera la nieve se derrite y el "
    "agua corre fría y clara sobre las piedras. ¿Quién construyó el molino? Nadie lo recuerda.\n"
    "\n"
    "Река начинается в холмах над городом. Весной снег тает, и вода бежит холодная и прозрачная по "
    "камням. Дети учатся плавать в глубоком омуте под мостом.\n"
    "\n"
    "Το ποτάμι ξεκινά από τους λόφους πάνω από την πόλη. Την άνοιξη το χιόνι λιώνει και το νερό "
    "τρέχει κρύο και καθαρό πάνω στις πέτρες.\n"
    "\n"
    "河流发源于小镇上方的山丘。春天积雪融化，清凉的河水流过石头。孩子们在桥下的深水潭里学游泳。没有"
    "人记得是谁建造了磨坊。\n"
    "\n"
    "川は町の上の丘から始まります。春になると雪が解けて、冷たく澄んだ水が石の上を流れます。子どもた"
    "ちは橋の下の深い淵で泳ぎを覚えます。\n"
    "\n"
    "강은 마을 위 언덕에서 시작됩니다. 봄이 되면 눈이 녹고 차갑고 맑은 물이 돌 위로 흐릅니다.\n"
    "\n"
    "Emoji appear in ordinary messages now: see you at 8 👋 🙂, the build is green ✅, the "
    "tests "
    "failed again ❌ 😞, and the cake was great 🎂🎉. Flags like 🇫🇷 and 🇯🇵 are pairs of regional "
    "indicators, and a family 👨‍👩‍👧 is several people joined by zero-width joiners.\n"
    "\n"
    "The weather report for the week: Monday sunny, 21 °C; Tuesday cloudy, 18 °C; Wednesday rain "
    "in the afternoon; Thursday and Friday windy with showers; the weekend dry again. Bring a coat "
    "anyway. I'd rather be cold than wet, and you'd say the same if you'd walked home through last "
    "night's storm.\n"
    "\n"
    "When the last visitor leaves, Anna washes the cups, checks the windows, and turns off the "
    "lights one by one. Outside, the river keeps running, the way it did before the mill was built "
    "and the way it will after the roof finally falls. The water doesn't care who is watching. It "
    "goes where the land lets it go, and it always finds the sea.\n"
    "\n"
    "Notes from the workshop, written quickly before the train:\n"
    "- Measure first. A profile beats a guess every time, and the slow part is rarely where you "
    "expect it.\n"
    "- Keep the fast path and the simple path side by side, and test that they agree on every "
    "input you can think of.\n"
    "- Write the error message for the person who will read it at three in the morning. Say what "
    "failed, where, and what the limit was.\n"
    "- Small steps. Each change should be easy to review, easy to revert, and easy to explain to "
    "someone who wasn't in the room.\n"
    "- Don't trust a benchmark you haven't run twice. Don't trust one you ran only on your own "
    "machine, either.\n"
    "\n"
    "She opened the box and found a letter, three photographs, and a key that didn't fit any lock "
    "in the house. The letter was short: \"If you're reading this, the garden needs water. The key "
    "is for the shed. Don't let the cat in.\" It wasn't signed, but she knew the handwriting. Her "
    "grandmother had written every shopping list, every birthday card, and every complaint to the "
    "council in the same careful, slanted letters.\n";

const char *demo_vocab_corpus(size_t *len)
{
    if (len) *len = sizeof corpus - 1;
    return corpus;
}

/* The real chat templates of the families each kind imitates (tokenizer_config.json). */
static const char tmpl_qwen2[] =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}{% endif %}"
    "{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
static const char tmpl_llama3[] =
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
    "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | "
    "trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}"
    "{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ "
    "'<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}";
static const char tmpl_llama2[] =
    "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set "
    "system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% "
    "set system_message = false %}{% endif %}{% for message in loop_messages %}{% if "
    "(message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation "
    "roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if loop.index0 == "
    "0 and system_message != false %}{% set content = '<<SYS>>\\n' + system_message + "
    "'\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = message['content'] "
    "%}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + "
    "content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + "
    "content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}";

/* conformance/jinja/templates/gemma-2-it.jinja */
static const char tmpl_gemma2[] =
    "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not "
    "supported') }}{% endif %}{% for message in messages %}{% if (message['role'] == 'user') != "
    "(loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate "
    "user/assistant/user/assistant/...') }}{% endif %}{% if (message['role'] == 'assistant') %}{% "
    "set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}{{ "
    "'<start_of_turn>' + role + '\n"
    "' + message['content'] | trim + '<end_of_turn>\n"
    "' }}{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\n"
    "'}}{% endif %}";
/* conformance/jinja/templates/gemma-3.jinja */
const char demo_tmpl_gemma3[] =
    "{{ bos_token }}\n"
    "{%- if messages[0]['role'] == 'system' -%}\n"
    "    {%- if messages[0]['content'] is string -%}\n"
    "        {%- set first_user_prefix = messages[0]['content'] + '\n"
    "\n"
    "' -%}\n"
    "    {%- else -%}\n"
    "        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '\n"
    "\n"
    "' -%}\n"
    "    {%- endif -%}\n"
    "    {%- set loop_messages = messages[1:] -%}\n"
    "{%- else -%}\n"
    "    {%- set first_user_prefix = \"\" -%}\n"
    "    {%- set loop_messages = messages -%}\n"
    "{%- endif -%}\n"
    "{%- for message in loop_messages -%}\n"
    "    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}\n"
    "        {{ raise_exception(\"Conversation roles must alternate "
    "user/assistant/user/assistant/...\") }}\n"
    "    {%- endif -%}\n"
    "    {%- if (message['role'] == 'assistant') -%}\n"
    "        {%- set role = \"model\" -%}\n"
    "    {%- else -%}\n"
    "        {%- set role = message['role'] -%}\n"
    "    {%- endif -%}\n"
    "    {{ '<start_of_turn>' + role + '\n"
    "' + (first_user_prefix if loop.first else \"\") }}\n"
    "    {%- if message['content'] is string -%}\n"
    "        {{ message['content'] | trim }}\n"
    "    {%- elif message['content'] is iterable -%}\n"
    "        {%- for item in message['content'] -%}\n"
    "            {%- if item['type'] == 'image' -%}\n"
    "                {{ '<start_of_image>' }}\n"
    "            {%- elif item['type'] == 'text' -%}\n"
    "                {{ item['text'] | trim }}\n"
    "            {%- endif -%}\n"
    "        {%- endfor -%}\n"
    "    {%- else -%}\n"
    "        {{ raise_exception(\"Invalid content type\") }}\n"
    "    {%- endif -%}\n"
    "    {{ '<end_of_turn>\n"
    "' }}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}\n"
    "    {{'<start_of_turn>model\n"
    "'}}\n"
    "{%- endif -%}\n";
/* conformance/jinja/templates/phi-3.jinja */
static const char tmpl_phi3[] =
    "{% if messages[0]['role'] == 'system' %}\n"
    "    {% set offset = 1 %}\n"
    "{% else %}\n"
    "    {% set offset = 0 %}\n"
    "{% endif %}\n"
    "\n"
    "{% for message in messages %}\n"
    "    {% if (message['role'] == 'user') != (loop.index0 % 2 == offset) %}\n"
    "        {{ raise_exception('Conversation roles must alternate "
    "user/assistant/user/assistant/...') }}\n"
    "    {% endif %}\n"
    "\n"
    "    {{ '<|' + message['role'] + '|>\\n' + message['content'] | trim + '<|end|>' + '\\n' }}\n"
    "{% endfor %}\n"
    "\n"
    "{% if add_generation_prompt %}\n"
    "    {{ '<|assistant|>\\n' }}\n"
    "{% endif %}\n";
/* conformance/jinja/templates/mistral-instruct.jinja */
const char demo_tmpl_mistral[] =
    "{% if messages[0]['role'] == 'system' %}\n"
    "    {% set loop_messages = messages[1:] %}\n"
    "    {% set system_message = messages[0]['content'].strip() + '\\n\\n' %}\n"
    "{% else %}\n"
    "    {% set loop_messages = messages %}\n"
    "    {% set system_message = '' %}\n"
    "{% endif %}\n"
    "\n"
    "{{ bos_token }}\n"
    "{% for message in loop_messages %}\n"
    "    {% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}\n"
    "        {{ raise_exception('Conversation roles must alternate "
    "user/assistant/user/assistant/...') }}\n"
    "    {% endif %}\n"
    "    \n"
    "    {% if loop.index0 == 0 %}\n"
    "        {% set content = system_message + message['content'] %}\n"
    "    {% else %}\n"
    "        {% set content = message['content'] %}\n"
    "    {% endif %}\n"
    "    \n"
    "    {% if message['role'] == 'user' %}\n"
    "        {{ '[INST] ' + content.strip() + ' [/INST]' }}\n"
    "    {% elif message['role'] == 'assistant' %}\n"
    "        {{ ' '  + content.strip() + ' ' + eos_token }}\n"
    "    {% endif %}\n"
    "{% endfor %}";

/* GGUF token types (tokenizer.ggml.token_type). */
enum { T_NORMAL = 1, T_UNKNOWN = 2, T_CONTROL = 3, T_BYTE = 6 };

/* ---- a table of distinct byte strings, each with an id ---- */

struct strtab {
    char *arena;
    size_t alen, acap;
    uint32_t *off, *len;
    uint32_t n, cap;
    uint32_t *hash; /* id + 1; 0 = empty */
    uint32_t hcap;
};

static uint32_t hbytes(const char *p, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 16777619u;
    return h;
}

static int64_t st_find(const struct strtab *t, const char *p, size_t n)
{
    if (!t->hcap) return -1;
    for (uint32_t h = hbytes(p, n) & (t->hcap - 1);; h = (h + 1) & (t->hcap - 1)) {
        uint32_t v = t->hash[h];
        if (!v) return -1;
        if (t->len[v - 1] == n && memcmp(t->arena + t->off[v - 1], p, n) == 0) return v - 1;
    }
}

static int st_rehash(struct strtab *t, uint32_t hcap)
{
    uint32_t *h = calloc(hcap, sizeof *h);
    if (!h) return -1;
    for (uint32_t i = 0; i < t->n; i++) {
        uint32_t k = hbytes(t->arena + t->off[i], t->len[i]) & (hcap - 1);
        while (h[k]) k = (k + 1) & (hcap - 1);
        h[k] = i + 1;
    }
    free(t->hash);
    t->hash = h;
    t->hcap = hcap;
    return 0;
}

/* Adds a string that is not in the table; returns its id, or -1 when out of memory. */
static int64_t st_add(struct strtab *t, const char *p, size_t n)
{
    if (t->alen + n > t->acap) {
        size_t c = t->acap ? 2 * t->acap : 4096;
        while (c < t->alen + n) c *= 2;
        char *a = realloc(t->arena, c);
        if (!a) return -1;
        t->arena = a;
        t->acap = c;
    }
    if (t->n == t->cap) {
        uint32_t c = t->cap ? 2 * t->cap : 1024;
        uint32_t *o = realloc(t->off, c * sizeof *o);
        if (!o) return -1;
        t->off = o;
        uint32_t *l = realloc(t->len, c * sizeof *l);
        if (!l) return -1;
        t->len = l;
        t->cap = c;
    }
    if (2 * (t->n + 1) > t->hcap && st_rehash(t, t->hcap ? 2 * t->hcap : 2048)) return -1;
    memcpy(t->arena + t->alen, p, n);
    t->off[t->n] = (uint32_t)t->alen;
    t->len[t->n] = (uint32_t)n;
    t->alen += n;
    uint32_t k = hbytes(p, n) & (t->hcap - 1);
    while (t->hash[k]) k = (k + 1) & (t->hcap - 1);
    t->hash[k] = t->n + 1;
    return t->n++;
}

static void st_free(struct strtab *t)
{
    free(t->arena);
    free(t->off);
    free(t->len);
    free(t->hash);
    memset(t, 0, sizeof *t);
}

/* ---- the trainer ---- */

struct trainer {
    struct strtab tok;   /* token (piece) strings: BPE raw bytes, SPM UTF-8 */
    struct strtab words; /* distinct pre-split words */
    int64_t *wcount;
    int32_t *sym; /* each word's symbols (token ids; -1 = may not merge), concatenated */
    uint32_t *wstart, *wlen;
    uint64_t *pkey; /* pair map: (a << 32 | b) + 1, 0 = empty */
    int64_t *pcnt;
    uint32_t pcap, pn;
    uint32_t *merges; /* BPE: pairs in rank order, 2 per merge */
    uint32_t n_merges, merges_cap;
    uint32_t n_base; /* tokens before training (bytes or characters) */
    uint64_t rng;
};

static uint64_t next_rand(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void trainer_free(struct trainer *tr)
{
    st_free(&tr->tok);
    st_free(&tr->words);
    free(tr->wcount);
    free(tr->sym);
    free(tr->wstart);
    free(tr->wlen);
    free(tr->pkey);
    free(tr->pcnt);
    free(tr->merges);
}

static int add_word(struct trainer *tr, const char *p, size_t n)
{
    if (n == 0) return 0;
    int64_t id = st_find(&tr->words, p, n);
    if (id < 0) {
        id = st_add(&tr->words, p, n);
        if (id < 0) return -1;
        int64_t *c = realloc(tr->wcount, tr->words.cap * sizeof *c);
        if (!c) return -1;
        tr->wcount = c;
        c[id] = 0;
    }
    tr->wcount[id]++;
    return 0;
}

static uint32_t pslot(const struct trainer *tr, uint64_t key)
{
    uint64_t h = key * 0x9e3779b97f4a7c15ull;
    uint32_t k = (uint32_t)(h >> 32) & (tr->pcap - 1);
    while (tr->pkey[k] && tr->pkey[k] != key) k = (k + 1) & (tr->pcap - 1);
    return k;
}

static int pair_add(struct trainer *tr, int32_t a, int32_t b, int64_t delta)
{
    if (a < 0 || b < 0) return 0;
    if (2 * (tr->pn + 1) > tr->pcap) {
        uint32_t cap = tr->pcap ? 2 * tr->pcap : 4096;
        uint64_t *ok = tr->pkey;
        int64_t *oc = tr->pcnt;
        uint32_t ocap = tr->pcap;
        tr->pkey = calloc(cap, sizeof *tr->pkey);
        tr->pcnt = calloc(cap, sizeof *tr->pcnt);
        if (!tr->pkey || !tr->pcnt) {
            free(ok);
            free(oc);
            return -1;
        }
        tr->pcap = cap;
        for (uint32_t i = 0; i < ocap; i++)
            if (ok[i]) {
                uint32_t k = pslot(tr, ok[i]);
                tr->pkey[k] = ok[i];
                tr->pcnt[k] = oc[i];
            }
        free(ok);
        free(oc);
    }
    uint64_t key = ((uint64_t)(uint32_t)a << 32 | (uint32_t)b) + 1;
    uint32_t k = pslot(tr, key);
    if (!tr->pkey[k]) {
        tr->pkey[k] = key;
        tr->pn++;
    }
    tr->pcnt[k] += delta;
    return 0;
}

/* Counts every adjacent pair of every word. */
static int count_pairs(struct trainer *tr)
{
    for (uint32_t w = 0; w < tr->words.n; w++)
        for (uint32_t i = 1; i < tr->wlen[w]; i++)
            if (pair_add(tr, tr->sym[tr->wstart[w] + i - 1], tr->sym[tr->wstart[w] + i],
                         tr->wcount[w]))
                return -1;
    return 0;
}

/* The most frequent pair (ties: lowest ids); 0 when none is left. */
static int best_pair(const struct trainer *tr, int32_t *a, int32_t *b)
{
    uint64_t best = 0;
    int64_t bc = 0;
    for (uint32_t i = 0; i < tr->pcap; i++)
        if (tr->pkey[i] && tr->pcnt[i] > 0 &&
            (tr->pcnt[i] > bc || (tr->pcnt[i] == bc && tr->pkey[i] < best))) {
            bc = tr->pcnt[i];
            best = tr->pkey[i];
        }
    if (!best) return 0;
    *a = (int32_t)((best - 1) >> 32);
    *b = (int32_t)(uint32_t)(best - 1);
    return 1;
}

/* Replaces every (a, b) in every word by c, keeping the pair counts exact. */
static int apply_merge(struct trainer *tr, int32_t a, int32_t b, int32_t c)
{
    for (uint32_t w = 0; w < tr->words.n; w++) {
        int32_t *s = tr->sym + tr->wstart[w];
        uint32_t n = tr->wlen[w], i = 1;
        while (i < n && !(s[i - 1] == a && s[i] == b)) i++;
        if (i >= n) continue;
        int64_t k = tr->wcount[w];
        for (i = 1; i < n; i++)
            if (pair_add(tr, s[i - 1], s[i], -k)) return -1;
        uint32_t o = 0;
        for (i = 0; i < n; i++) {
            if (i + 1 < n && s[i] == a && s[i + 1] == b) {
                s[o++] = c;
                i++;
            } else {
                s[o++] = s[i];
            }
        }
        tr->wlen[w] = o;
        for (i = 1; i < o; i++)
            if (pair_add(tr, s[i - 1], s[i], k)) return -1;
    }
    return 0;
}

static int record_merge(struct trainer *tr, uint32_t a, uint32_t b)
{
    if (tr->n_merges == tr->merges_cap) {
        uint32_t c = tr->merges_cap ? 2 * tr->merges_cap : 1024;
        uint32_t *m = realloc(tr->merges, 2 * (size_t)c * sizeof *m);
        if (!m) return -1;
        tr->merges = m;
        tr->merges_cap = c;
    }
    tr->merges[2 * tr->n_merges] = a;
    tr->merges[2 * tr->n_merges + 1] = b;
    tr->n_merges++;
    return 0;
}

/* Concatenation of tokens a and b into buf (at most 2 * 64 bytes are ever needed). */
static size_t concat(const struct trainer *tr, uint32_t a, uint32_t b, char *buf, size_t cap)
{
    size_t la = tr->tok.len[a], lb = tr->tok.len[b];
    if (la + lb > cap) return 0;
    memcpy(buf, tr->tok.arena + tr->tok.off[a], la);
    memcpy(buf + la, tr->tok.arena + tr->tok.off[b], lb);
    return la + lb;
}

#define MAX_PIECE 64 /* bytes of a trained or synthetic token */

/* Merges until the table holds target strings or no pair is left. */
static int train(struct trainer *tr, uint32_t target, int record)
{
    if (count_pairs(tr)) return -1;
    int32_t a, b;
    char buf[2 * MAX_PIECE];
    while (tr->tok.n < target && best_pair(tr, &a, &b)) {
        size_t n = concat(tr, (uint32_t)a, (uint32_t)b, buf, MAX_PIECE);
        if (n == 0) {
            /* too long to keep: retire the pair */
            if (pair_add(tr, a, b, -((int64_t)1 << 40))) return -1;
            continue;
        }
        int64_t c = st_find(&tr->tok, buf, n);
        if (c < 0 && (c = st_add(&tr->tok, buf, n)) < 0) return -1;
        if (record && record_merge(tr, (uint32_t)a, (uint32_t)b)) return -1;
        if (apply_merge(tr, a, b, (int32_t)c)) return -1;
    }
    return 0;
}

static int is_word_byte(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80;
}

/* After the text is used up: pairs of existing tokens, drawn deterministically, that look like
 * longer words (a ends in a letter, b starts with one). */
static int synthesize(struct trainer *tr, uint32_t target, int record)
{
    char buf[2 * MAX_PIECE];
    uint32_t lo = tr->n_base;
    uint64_t tries = 0;
    while (tr->tok.n < target) {
        if (++tries > 64ull * target + 100000) return -1; /* cannot happen for sane sizes */
        uint32_t n = tr->tok.n;
        uint32_t a = lo < n ? lo + (uint32_t)(next_rand(&tr->rng) % (n - lo))
                            : (uint32_t)(next_rand(&tr->rng) % n);
        uint32_t b = (uint32_t)(next_rand(&tr->rng) % n);
        const unsigned char *pa = (const unsigned char *)tr->tok.arena + tr->tok.off[a];
        const unsigned char *pb = (const unsigned char *)tr->tok.arena + tr->tok.off[b];
        if (!is_word_byte(pa[tr->tok.len[a] - 1]) || !is_word_byte(pb[0])) continue;
        /* SentencePiece pieces have U+2581 only in front, as with split_by_whitespace */
        if (tr->tok.len[b] >= 3 && memcmp(pb, "\xe2\x96\x81", 3) == 0) continue;
        size_t k = concat(tr, a, b, buf, MAX_PIECE);
        if (k == 0 || st_find(&tr->tok, buf, k) >= 0) continue;
        if (st_add(&tr->tok, buf, k) < 0) return -1;
        if (record && record_merge(tr, a, b)) return -1;
    }
    return 0;
}

/* ---- pre-splitting the text ---- */

static int is_letter(const char *p, size_t n, size_t i)
{
    return i < n && is_word_byte((unsigned char)p[i]);
}

static int is_digit(const char *p, size_t n, size_t i)
{
    return i < n && p[i] >= '0' && p[i] <= '9';
}

static int is_space(const char *p, size_t n, size_t i)
{
    return i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r');
}

/* Close to Qwen2's regex: contractions, [^\r\n L N]?L+, single digits, ' ?' punctuation runs
 * with trailing newlines, whitespace ending in newlines, other whitespace. */
static int split_bpe(struct trainer *tr, const char *p, size_t n)
{
    static const char *const contractions[] = {"'s", "'t", "'re", "'ve", "'m", "'ll", "'d"};
    size_t i = 0;
    while (i < n) {
        size_t j = i;
        for (size_t c = 0; c < 7 && j == i; c++) {
            size_t k = strlen(contractions[c]);
            if (i + k <= n && memcmp(p + i, contractions[c], k) == 0 && !is_letter(p, n, i + k))
                j = i + k;
        }
        if (j == i &&
            (is_letter(p, n, i) ||
             (!is_space(p, n, i) && !is_digit(p, n, i) && p[i] != '\n' && is_letter(p, n, i + 1)) ||
             (p[i] == ' ' && is_letter(p, n, i + 1)))) {
            j = i + 1;
            while (is_letter(p, n, j)) j++;
        } else if (j == i && is_digit(p, n, i)) {
            j = i + 1;
        } else if (j == i && !is_space(p, n, i)) {
            j = i + 1;
            while (j < n && !is_space(p, n, j) && !is_letter(p, n, j) && !is_digit(p, n, j)) j++;
            while (j < n && p[j] == '\n') j++;
        } else if (j == i && p[i] == ' ' && i + 1 < n && !is_space(p, n, i + 1) &&
                   !is_digit(p, n, i + 1)) {
            j = i + 1;
            while (j < n && !is_space(p, n, j) && !is_letter(p, n, j) && !is_digit(p, n, j)) j++;
        } else if (j == i) {
            j = i;
            while (is_space(p, n, j)) j++;
            size_t last_nl = i;
            for (size_t k = i; k < j; k++)
                if (p[k] == '\n') last_nl = k + 1;
            if (last_nl > i)
                j = last_nl;
            else if (j < n && j - i > 1)
                j--; /* the last space goes with the next word */
        }
        if (add_word(tr, p + i, j - i)) return -1;
        i = j;
    }
    return 0;
}

/* SentencePiece style: words split at whitespace, each prefixed with U+2581. */
static int split_spm(struct trainer *tr, const char *p, size_t n)
{
    char buf[512];
    size_t i = 0;
    while (i < n) {
        while (i < n && is_space(p, n, i)) i++;
        size_t j = i;
        while (j < n && !is_space(p, n, j)) j++;
        if (j > i && j - i + 3 <= sizeof buf) {
            memcpy(buf, "\xe2\x96\x81", 3);
            memcpy(buf + 3, p + i, j - i);
            if (add_word(tr, buf, j - i + 3)) return -1;
        }
        i = j;
    }
    return 0;
}

static size_t utf8_len(const unsigned char *p, size_t n)
{
    size_t k = p[0] < 0x80 ? 1 : p[0] < 0xE0 ? 2 : p[0] < 0xF0 ? 3 : 4;
    return k <= n ? k : n;
}

/* Words -> symbols: BPE one per byte (ids = bytes); SPM one per character (its piece id, or -1
 * for a character outside the table). */
static int make_symbols(struct trainer *tr, int per_byte)
{
    uint32_t nw = tr->words.n;
    tr->wstart = malloc((nw ? nw : 1) * sizeof *tr->wstart);
    tr->wlen = malloc((nw ? nw : 1) * sizeof *tr->wlen);
    tr->sym = malloc((tr->words.alen ? tr->words.alen : 1) * sizeof *tr->sym);
    if (!tr->wstart || !tr->wlen || !tr->sym) return -1;
    uint32_t o = 0;
    for (uint32_t w = 0; w < nw; w++) {
        const unsigned char *p = (const unsigned char *)tr->words.arena + tr->words.off[w];
        size_t n = tr->words.len[w];
        tr->wstart[w] = o;
        for (size_t i = 0; i < n;) {
            size_t k = per_byte ? 1 : utf8_len(p + i, n - i);
            tr->sym[o++] =
                per_byte ? (int32_t)p[i] : (int32_t)st_find(&tr->tok, (const char *)p + i, k);
            i += k;
        }
        tr->wlen[w] = o - tr->wstart[w];
    }
    return 0;
}

/* ---- writing ---- */

/* GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves, the other 68 move to
 * U+0100.. in order. Writes the UTF-8 of byte b's character; returns its length. */
static size_t gpt2_char(unsigned char b, char *out)
{
    uint32_t cp;
    if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE)) {
        cp = b;
    } else {
        uint32_t k = b <= 0x20 ? b : b <= 0xA0 ? 33u + (b - 0x7Fu) : 67u;
        cp = 0x100 + k;
    }
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    out[0] = (char)(0xC0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
}

struct texts {
    char *arena;
    size_t len, cap;
    size_t *off, *lens;
    const char **ptr;
    uint32_t n;
};

static int tx_add(struct texts *t, const char *p, size_t n, int gpt2)
{
    size_t need = gpt2 ? 2 * n : n;
    if (t->len + need > t->cap) {
        size_t c = t->cap ? 2 * t->cap : 65536;
        while (c < t->len + need) c *= 2;
        char *a = realloc(t->arena, c);
        if (!a) return -1;
        t->arena = a;
        t->cap = c;
    }
    size_t start = t->len;
    if (gpt2)
        for (size_t i = 0; i < n; i++) t->len += gpt2_char((unsigned char)p[i], t->arena + t->len);
    else {
        memcpy(t->arena + t->len, p, n);
        t->len += n;
    }
    t->off[t->n] = start;
    t->lens[t->n] = t->len - start;
    t->n++;
    return 0;
}

static pl_status fail(pl_error *err, pl_status code, const char *msg)
{
    if (err) {
        err->code = code;
        snprintf(err->msg, sizeof err->msg, "demo_vocab: %s", msg);
    }
    return code;
}

static pl_status put_array_str(pl_gguf_writer *w, const char *key, struct texts *t, pl_error *err)
{
    for (uint32_t i = 0; i < t->n; i++) t->ptr[i] = t->arena + t->off[i];
    return pl_gguf_writer_set_array_str(w, key, t->ptr, t->lens, t->n, err);
}

static pl_status put_bool(pl_gguf_writer *w, const char *key, int v, pl_error *err)
{
    uint8_t b = (uint8_t)(v != 0);
    return pl_gguf_writer_set(w, key, PL_GGUF_BOOL, &b, err);
}

static int texts_init(struct texts *t, uint32_t n)
{
    memset(t, 0, sizeof *t);
    t->off = malloc(n * sizeof *t->off);
    t->lens = malloc(n * sizeof *t->lens);
    t->ptr = malloc(n * sizeof *t->ptr);
    return t->off && t->lens && t->ptr ? 0 : -1;
}

static void texts_free(struct texts *t)
{
    free(t->arena);
    free(t->off);
    free(t->lens);
    free(t->ptr);
}

uint32_t demo_vocab_min(enum demo_vocab_kind kind)
{
    switch (kind) {
    case DEMO_VOCAB_SPM:
        return 3 + 256 + 1; /* specials, bytes, and the U+2581 piece */
    case DEMO_VOCAB_GEMMA:
        return 4 + 256 + 1 + 2;
    case DEMO_VOCAB_PHI3:
        return 3 + 256 + 1 + 5;
    case DEMO_VOCAB_BPE:
        return 256 + 3;
    case DEMO_VOCAB_BPE_LLAMA3:
        return 256 + 5;
    }
    return UINT32_MAX;
}

static pl_status write_bpe(pl_gguf_writer *w, enum demo_vocab_kind kind, uint32_t n_vocab,
                           pl_error *err)
{
    static const char *const qwen_special[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
    static const char *const llama3_special[] = {"<|begin_of_text|>", "<|end_of_text|>",
                                                 "<|start_header_id|>", "<|end_header_id|>",
                                                 "<|eot_id|>"};
    int llama3 = kind == DEMO_VOCAB_BPE_LLAMA3;
    const char *const *special = llama3 ? llama3_special : qwen_special;
    uint32_t n_special = llama3 ? 5 : 3, n_regular = n_vocab - n_special;
    struct trainer tr = {.rng = 0x706c756d62ull};
    struct texts toks = {0}, merges = {0};
    int32_t *types = NULL;
    pl_status s = PL_ERR_NOMEM;
    for (int b = 0; b < 256; b++) {
        char c = (char)b;
        if (st_add(&tr.tok, &c, 1) < 0) goto done;
    }
    tr.n_base = 256;
    if (split_bpe(&tr, corpus, sizeof corpus - 1) || make_symbols(&tr, 1) ||
        train(&tr, n_regular, 1) || synthesize(&tr, n_regular, 1))
        goto done;
    types = malloc(n_vocab * sizeof *types);
    if (!types || texts_init(&toks, n_vocab) || texts_init(&merges, tr.n_merges ? tr.n_merges : 1))
        goto done;
    for (uint32_t i = 0; i < n_regular; i++) {
        if (tx_add(&toks, tr.tok.arena + tr.tok.off[i], tr.tok.len[i], 1)) goto done;
        types[i] = T_NORMAL;
    }
    for (uint32_t i = 0; i < n_special; i++) {
        if (tx_add(&toks, special[i], strlen(special[i]), 0)) goto done;
        types[n_regular + i] = T_CONTROL;
    }
    char buf[4 * MAX_PIECE + 1];
    for (uint32_t m = 0; m < tr.n_merges; m++) {
        uint32_t a = tr.merges[2 * m], b = tr.merges[2 * m + 1];
        size_t o = 0;
        for (uint32_t k = 0; k < tr.tok.len[a]; k++)
            o += gpt2_char((unsigned char)tr.tok.arena[tr.tok.off[a] + k], buf + o);
        buf[o++] = ' ';
        for (uint32_t k = 0; k < tr.tok.len[b]; k++)
            o += gpt2_char((unsigned char)tr.tok.arena[tr.tok.off[b] + k], buf + o);
        if (tx_add(&merges, buf, o, 0)) goto done;
    }
    uint32_t first_special = n_regular;
    uint32_t bos = first_special, eos = first_special + (llama3 ? 4 : 2);
    const char *pre = llama3 ? "llama-bpe" : "qwen2";
    const char *tmpl = llama3 ? tmpl_llama3 : tmpl_qwen2;
    if ((s = pl_gguf_writer_set_string(w, "tokenizer.ggml.model", "gpt2", 4, err)) ||
        (s = pl_gguf_writer_set_string(w, "tokenizer.ggml.pre", pre, strlen(pre), err)) ||
        (s = put_array_str(w, "tokenizer.ggml.tokens", &toks, err)) ||
        (s = pl_gguf_writer_set_array(w, "tokenizer.ggml.token_type", PL_GGUF_INT32, types, n_vocab,
                                      err)) ||
        (s = put_array_str(w, "tokenizer.ggml.merges", &merges, err)) ||
        (s = pl_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", bos, err)) ||
        (s = pl_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", eos, err)) ||
        (s = pl_gguf_writer_set_u32(w, "tokenizer.ggml.padding_token_id", first_special, err)) ||
        (s = put_bool(w, "tokenizer.ggml.add_bos_token", llama3, err)) ||
        (s = pl_gguf_writer_set_string(w, "tokenizer.chat_template", tmpl, strlen(tmpl), err)))
        goto done;
    s = PL_OK;
done:
    if (s == PL_ERR_NOMEM) fail(err, s, "out of memory while building the BPE vocabulary");
    trainer_free(&tr);
    texts_free(&toks);
    texts_free(&merges);
    free(types);
    return s;
}

/* Characters of the words, most frequent first (ties: lower bytes first). */
struct charfreq {
    char c[4];
    uint32_t len;
    int64_t n;
};

static int cmp_charfreq(const void *a, const void *b)
{
    const struct charfreq *x = a, *y = b;
    if (x->n != y->n) return x->n > y->n ? -1 : 1;
    if (x->len != y->len) return x->len < y->len ? -1 : 1;
    return memcmp(x->c, y->c, x->len);
}

static int pick_chars(struct trainer *tr, uint32_t budget)
{
    struct strtab seen = {0};
    struct charfreq *f = NULL;
    uint32_t nf = 0, capf = 0;
    for (uint32_t w = 0; w < tr->words.n; w++) {
        const unsigned char *p = (const unsigned char *)tr->words.arena + tr->words.off[w];
        size_t n = tr->words.len[w];
        for (size_t i = 0; i < n;) {
            size_t k = utf8_len(p + i, n - i);
            int64_t id = st_find(&seen, (const char *)p + i, k);
            if (id < 0) {
                if ((id = st_add(&seen, (const char *)p + i, k)) < 0) goto oom;
                if (nf == capf) {
                    capf = capf ? 2 * capf : 256;
                    struct charfreq *g = realloc(f, capf * sizeof *f);
                    if (!g) goto oom;
                    f = g;
                }
                memset(&f[nf], 0, sizeof f[nf]);
                memcpy(f[nf].c, p + i, k);
                f[nf].len = (uint32_t)k;
                nf++;
            }
            f[id].n += tr->wcount[w];
            i += k;
        }
    }
    qsort(f, nf, sizeof *f, cmp_charfreq);
    uint32_t keep = budget / 2 > 1 ? budget / 2 : 1;
    if (keep > nf) keep = nf;
    for (uint32_t i = 0; i < keep; i++)
        if (st_add(&tr->tok, f[i].c, f[i].len) < 0) goto oom;
    free(f);
    st_free(&seen);
    return 0;
oom:
    free(f);
    st_free(&seen);
    return -1;
}

/* The layout of a SentencePiece vocabulary: its leading specials (the first ids), the 256 byte
 * tokens, the pieces, then its trailing specials (control, the last ids). */
struct spm_layout {
    const char *const *head; /* the first is <unk> unless unk says otherwise */
    uint32_t n_head;
    const char *const *tail;
    uint32_t n_tail;
    uint32_t bos, eos, unk; /* ids; a tail special's is n_vocab - n_tail + i */
    int64_t pad;            /* -1: none */
    int add_bos, add_space_prefix;
    const char *tmpl;
};

static pl_status write_spm(pl_gguf_writer *w, const struct spm_layout *l, uint32_t n_vocab,
                           pl_error *err)
{
    uint32_t n_fixed = l->n_head + 256, budget = n_vocab - n_fixed - l->n_tail;
    struct trainer tr = {.rng = 0x706c756d62ull};
    struct texts toks = {0};
    int32_t *types = NULL;
    float *scores = NULL;
    pl_status s = PL_ERR_NOMEM;
    if (split_spm(&tr, corpus, sizeof corpus - 1) || pick_chars(&tr, budget)) goto done;
    tr.n_base = tr.tok.n;
    uint32_t n_chars = tr.tok.n;
    if (make_symbols(&tr, 0) || train(&tr, budget, 0) || synthesize(&tr, budget, 0)) goto done;
    types = malloc(n_vocab * sizeof *types);
    scores = malloc(n_vocab * sizeof *scores);
    if (!types || !scores || texts_init(&toks, n_vocab)) goto done;
    for (uint32_t i = 0; i < l->n_head; i++) {
        if (tx_add(&toks, l->head[i], strlen(l->head[i]), 0)) goto done;
        types[i] = i == l->unk ? T_UNKNOWN : T_CONTROL;
        scores[i] = 0.0f;
    }
    for (uint32_t b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        if (tx_add(&toks, name, 6, 0)) goto done;
        types[l->n_head + b] = T_BYTE;
        scores[l->n_head + b] = 0.0f;
    }
    /* Merged pieces in the order they were made (score -rank), then the characters. */
    uint32_t o = n_fixed;
    for (uint32_t i = n_chars; i < tr.tok.n; i++, o++) {
        if (tx_add(&toks, tr.tok.arena + tr.tok.off[i], tr.tok.len[i], 0)) goto done;
        types[o] = T_NORMAL;
        scores[o] = -(float)(i - n_chars);
    }
    for (uint32_t i = 0; i < n_chars; i++, o++) {
        if (tx_add(&toks, tr.tok.arena + tr.tok.off[i], tr.tok.len[i], 0)) goto done;
        types[o] = T_NORMAL;
        scores[o] = -1e6f - (float)i;
    }
    for (uint32_t i = 0; i < l->n_tail; i++, o++) {
        if (tx_add(&toks, l->tail[i], strlen(l->tail[i]), 0)) goto done;
        types[o] = T_CONTROL;
        scores[o] = 0.0f;
    }
    if ((s = pl_gguf_writer_set_string(w, "tokenizer.ggml.model", "llama", 5, err)) ||
        (s = put_array_str(w, "tokenizer.ggml.tokens", &toks, err)) ||
        (s = pl_gguf_writer_set_array(w, "tokenizer.ggml.scores", PL_GGUF_FLOAT32, scores, n_vocab,
                                      err)) ||
        (s = pl_gguf_writer_set_array(w, "tokenizer.ggml.token_type", PL_GGUF_INT32, types, n_vocab,
                                      err)) ||
        (s = pl_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", l->bos, err)) ||
        (s = pl_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", l->eos, err)) ||
        (s = pl_gguf_writer_set_u32(w, "tokenizer.ggml.unknown_token_id", l->unk, err)) ||
        (l->pad >= 0 && (s = pl_gguf_writer_set_u32(w, "tokenizer.ggml.padding_token_id",
                                                    (uint32_t)l->pad, err))) ||
        (s = put_bool(w, "tokenizer.ggml.add_bos_token", l->add_bos, err)) ||
        (s = put_bool(w, "tokenizer.ggml.add_eos_token", 0, err)) ||
        (s = put_bool(w, "tokenizer.ggml.add_space_prefix", l->add_space_prefix, err)) ||
        (s = pl_gguf_writer_set_string(w, "tokenizer.chat_template", l->tmpl, strlen(l->tmpl),
                                       err)))
        goto done;
    s = PL_OK;
done:
    if (s == PL_ERR_NOMEM)
        fail(err, s, "out of memory while building the SentencePiece vocabulary");
    trainer_free(&tr);
    texts_free(&toks);
    free(types);
    free(scores);
    return s;
}

static pl_status write_spm_kind(pl_gguf_writer *w, enum demo_vocab_kind kind, uint32_t n_vocab,
                                pl_error *err)
{
    static const char *const llama_head[] = {"<unk>", "<s>", "</s>"};
    static const char *const gemma_head[] = {"<pad>", "<eos>", "<bos>", "<unk>"};
    static const char *const gemma_tail[] = {"<start_of_turn>", "<end_of_turn>"};
    static const char *const phi3_tail[] = {"<|endoftext|>", "<|assistant|>", "<|system|>",
                                            "<|end|>", "<|user|>"};
    struct spm_layout l = {llama_head, 3, NULL, 0, 1, 2, 0, -1, 1, 1, tmpl_llama2};
    if (kind == DEMO_VOCAB_GEMMA)
        l = (struct spm_layout){gemma_head, 4, gemma_tail, 2, 2, 1, 3, 0, 1, 0, tmpl_gemma2};
    else if (kind == DEMO_VOCAB_PHI3)
        l = (struct spm_layout){llama_head, 3,  phi3_tail, 5, 1,        n_vocab - 5,
                                0,          -1, 0,         1, tmpl_phi3};
    return write_spm(w, &l, n_vocab, err);
}

pl_status demo_vocab_write(pl_gguf_writer *w, enum demo_vocab_kind kind, uint32_t n_vocab,
                           pl_error *err)
{
    if (!w) return fail(err, PL_ERR_INVALID_ARG, "writer is NULL");
    uint32_t min = demo_vocab_min(kind);
    if (min == UINT32_MAX) return fail(err, PL_ERR_INVALID_ARG, "unknown vocabulary kind");
    if (n_vocab < min || n_vocab > PL_GGUF_MAX_ARRAY) {
        if (err) {
            err->code = PL_ERR_INVALID_ARG;
            snprintf(err->msg, sizeof err->msg,
                     "demo_vocab: n_vocab %u is outside %u..%u for this vocabulary kind", n_vocab,
                     min, PL_GGUF_MAX_ARRAY);
        }
        return PL_ERR_INVALID_ARG;
    }
    return kind == DEMO_VOCAB_BPE || kind == DEMO_VOCAB_BPE_LLAMA3
               ? write_bpe(w, kind, n_vocab, err)
               : write_spm_kind(w, kind, n_vocab, err);
}
