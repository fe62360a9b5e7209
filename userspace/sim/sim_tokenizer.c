/* sim/sim_tokenizer.c — the simulator's own deterministic tokenizer.
 * Vocabulary: ids 0..255 are the single bytes; 256 is <|endoftext|> (EOS) and 257 <|special|>,
 * both with empty text (as engines skip special tokens); 258.. are the words below, each with a
 * leading space. Encoding is greedy longest match from the left, falling
 * back to one byte per token, so decode(encode(s)) == s for every byte string. Generated text
 * draws words with a seeded stream and ends a sentence about every 12 tokens. */
#include <stdlib.h>
#include <string.h>
#include "sim/sim.h"

static const char *const words[] = {
	"the", "of", "and", "to", "in", "a", "is", "that", "for", "it", "as", "was", "with", "be",
	"by", "on", "not", "he", "this", "are", "or", "his", "from", "at", "which", "but", "have",
	"an", "had", "they", "you", "were", "their", "one", "all", "we", "can", "her", "has",
	"there", "been", "if", "more", "when", "will", "would", "who", "so", "no", "time", "model",
	"token", "server", "latency", "request", "batch", "step", "engine", "stream", "frame",
	"queue", "network", "kernel", "socket", "client", "prefill", "decode", "cache", "prefix",
	"draft", "accept", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "river",
	"mountain", "city", "light", "water", "world", "people", "system", "number", "part",
	"first", "new", "way", "may", "only", "other", "these", "two", "could", "then", "than",
	"into", "some", "its", "like", "what", "out", "up", "about", "also", "after", "many",
	"most", "made", "such", "where", "through", "between", "under", "each", "because",
	"measure", "second", "millisecond", "throughput", "median", "tail", "percentile",
	"Hello", "The", "In", "It", "We", "This", "A",
};
#define N_WORDS (sizeof(words) / sizeof(words[0]))
#define VOCAB (SIM_TOK_FIRST_WORD + (int)N_WORDS)
#define MAX_PIECE 24

static char piece_text[VOCAB][MAX_PIECE];
static unsigned char piece_len[VOCAB];
static int table[1024]; /* open addressing over multi-byte pieces; -1 empty */
static int ready;

static uint32_t piece_hash(const char *s, size_t n)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

static void build(void)
{
	if (ready)
		return;
	for (int i = 0; i < 256; i++) {
		piece_text[i][0] = (char)i;
		piece_len[i] = 1;
	}
	piece_len[SIM_TOK_EOS] = piece_len[SIM_TOK_EMPTY] = 0;
	for (size_t w = 0; w < N_WORDS; w++) {
		int id = SIM_TOK_FIRST_WORD + (int)w;
		piece_text[id][0] = ' ';
		size_t n = strlen(words[w]);
		memcpy(piece_text[id] + 1, words[w], n);
		piece_len[id] = (unsigned char)(n + 1);
	}
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		table[i] = -1;
	for (int id = SIM_TOK_FIRST_WORD; id < VOCAB; id++) {
		if (piece_len[id] < 2)
			continue; /* single bytes are covered by ids 0..255 */
		uint32_t h = piece_hash(piece_text[id], piece_len[id]) & 1023;
		while (table[h] >= 0)
			h = (h + 1) & 1023;
		table[h] = id;
	}
	ready = 1;
}

static int lookup(const char *s, size_t n)
{
	uint32_t h = piece_hash(s, n) & 1023;
	while (table[h] >= 0) {
		int id = table[h];
		if (piece_len[id] == n && memcmp(piece_text[id], s, n) == 0)
			return id;
		h = (h + 1) & 1023;
	}
	return -1;
}

int sim_tok_vocab_size(void)
{
	return VOCAB;
}

int sim_tok_encode(const char *text, size_t len, int **ids_out)
{
	build();
	int *ids = malloc((len ? len : 1) * sizeof(int));
	if (!ids)
		return -1;
	size_t n = 0, i = 0;
	while (i < len) {
		int id = -1;
		size_t take = 1;
		/* Pieces start with a space: only then is a multi-byte match possible. */
		if (text[i] == ' ') {
			size_t max = len - i < MAX_PIECE - 1 ? len - i : MAX_PIECE - 1;
			for (size_t l = max; l >= 2; l--) {
				id = lookup(text + i, l);
				if (id >= 0) {
					take = l;
					break;
				}
			}
		}
		if (id < 0)
			id = (unsigned char)text[i];
		ids[n++] = id;
		i += take;
	}
	*ids_out = ids;
	return (int)n;
}

int sim_tok_decode(const int *ids, size_t n, struct ls_strbuf *out)
{
	build();
	for (size_t i = 0; i < n; i++) {
		if (ids[i] < 0 || ids[i] >= VOCAB)
			return -1;
		if (ls_strbuf_append(out, piece_text[ids[i]], piece_len[ids[i]]))
			return -1;
	}
	return 0;
}

const char *sim_tok_text(int id, size_t *len)
{
	build();
	if (id < 0 || id >= VOCAB) {
		*len = 0;
		return "";
	}
	*len = piece_len[id];
	return piece_text[id];
}

int sim_tok_generate(uint64_t *rng)
{
	uint64_t x = sim_rng_next(rng);
	if (x % 12 == 0)
		return (x >> 8) % 2 ? '.' : ','; /* byte tokens: generated ids re-encode to themselves */
	return SIM_TOK_FIRST_WORD + (int)((x >> 16) % N_WORDS);
}
