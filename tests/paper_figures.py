"""Figures printed in the LENS paper (Maddela et al., ACL 2023) that the platform must reproduce on the
released data. Shared by the pure statistics tests and the end-to-end report tests."""

# Table 1, SimpEval_2022: system -> (raw mean, z mean), as printed.
TABLE1_2022 = {
    "Human 2 Writing": (81.87, 0.424),
    "Human 1 Writing": (81.57, 0.395),
    "GPT-3-few-shot": (79.59, 0.280),
    "GPT-3-zero-shot": (75.27, -0.025),
    "Muss": (70.74, -0.333),
    "T5-3B": (64.98, -0.700),
}
# Table 1, SimpEval_past: the file's system name -> (the paper's name, raw mean, z mean).
TABLE1_PAST = {
    "asset.test.simp": ("Human-1", 86.69, 0.783),
    "new_asset.test.simp.second": ("Human-2", 86.12, 0.711),
    "muss_untokenized": ("MUSS", 84.48, 0.653),
    "ControlT5": ("ControlT5", 84.70, 0.650),
    "T5-3B": ("T5-3B", 82.79, 0.492),
    "T5-large": ("T5-large", 81.86, 0.453),
    "T5-base": ("T5-base", 82.15, 0.443),
    "transformer_w_split": ("Transformer", 79.42, 0.366),
    "con_simplification": ("Controllable", 79.44, 0.323),
    "new_turk_corpus_random": ("Human-3", 79.54, 0.281),
    "new_simple_wiki": ("Human-4", 78.36, 0.249),
    "Dress-Ls.lower": ("DRESS", 77.18, 0.206),
    "copy": ("Copy", 76.81, 0.103),
    "access": ("ACCESS", 73.25, 0.001),
    "SBMT-SARI.lower": ("SBMT-SARI", 73.66, -0.014),
    "PBMT-R.lower": ("PBMT-R", 72.44, -0.066),
    "editnts_w_split": ("EditNTS", 70.15, -0.162),
    "lstm_w_split": ("BiLSTM", 68.35, -0.245),
    "SEMoses_all": ("SEMoses", 62.84, -0.565),
    "UNTS": ("UNTS", 62.66, -0.596),
    "UNMT": ("UNMT", 60.43, -0.673),
    "RM+EX+LS+RO": ("Rule-based", 60.15, -0.687),
    "Hybrid.lower": ("Hybrid", 55.36, -0.925),
    "scramble_words": ("Scramble", 35.17, -1.954),
}
