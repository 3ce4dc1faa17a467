"""The tables of rankscale.tables.metrics, declared: names, inputs, settings, captions and where each implementation lives, importing none of it (planning reads these)."""

from __future__ import annotations

from rankscale.limits import BIAS_LIMIT, FEW_DOCUMENTS, RELIABLE_DESIGN_EFFECT, RELIABLE_DOCUMENTS
from rankscale.sections import LAWS
from rankscale.tables.declaration import Table

TABLES = [
    Table(
        name="metrics",
        section=LAWS,
        build="rankscale.tables.metrics:build_metrics",
        resampled=True,
        settings=("level",),
        caption=(
            "Tidy metrics: one row per model, dataset and metric. ``metric = rbp`` rows give RBP_k "
            "(fraction of scored tokens whose correct token ranks <= k) on a log-spaced k grid from 1 to "
            "the vocabulary size; ``metric = ce`` rows give the cross-entropy in nats per token, ``metric = bpb`` "
            "the same in bits per UTF-8 byte of the scored targets' text (comparable across tokenizers). S is the number of "
            "non-embedding parameters; n_tokens the number of scored tokens, n_documents their documents and "
            "n_eff_documents Kish's effective number of them, (sum n_d)^2 / sum n_d^2; ``few_documents``: under "
            f"{FEW_DOCUMENTS:g} effective documents, where the intervals rest on their small-sample correction and a "
            "law's lack of fit is tested from the documents themselves. ``ci_low``, ``ci_high``: the "
            "``analysis.bootstrap.level`` interval, by ``ci_method``: ``cr2_t`` for RBP_k, CE and bits per byte (ratios "
            "of document sums: the cluster-robust CR2 variance of the documents' own rates with a t quantile on "
            "Bell and McCaffrey's degrees of freedom, which fall as a few documents dominate; exact, so "
            "``ci_mc_error`` 0), ``bca`` for the rank histogram's statistics (BCa over the document bootstrap of "
            "``replicates`` replicates, ``analysis.lognormal.replicates``, with the jackknife over documents) where "
            "BCa is stable under a redraw of the replicates (the jackknife's bias within half of "
            f"{BIAS_LIMIT:g} of its SE, BCa's levels resolved by the replicates), ``jackknife_t`` where it is not "
            "(the estimate -/+ t times the jackknife's SE over documents, t on the documents' Bell-McCaffrey degrees "
            "of freedom; exact, ``ci_mc_error`` 0), empty where the statistic is biased under resampling beyond "
            f"{2 * BIAS_LIMIT:g} of an SE: no valid interval). ``ee``, "
            "``self_alignment`` and ``confidence``: ``ee`` is the jackknife over documents of its plug-in value, "
            "``confidence`` Chao2's estimate with the rank errors a sample missed (``rankscale.unseen_ranks``), "
            "``self_alignment`` ce less both (the plug-ins' bias was 1-6 SDs); their replicates are the same "
            "estimators', recentred on them, and their bias is those estimators' residual bias; ``bootstrap_se_t`` for "
            "``confidence`` and ``self_alignment`` (the estimate -/+ t times their replicates' SD, t on the "
            "documents' Bell-McCaffrey degrees of freedom: Chao2 is no smooth statistic, so the jackknife's bias "
            f"decides nothing for it; empty where the replicates' z0 puts the bias beyond {2 * BIAS_LIMIT:g}); "
            "``bc`` where a table is built without the "
            "documents' sums. ``ci_reliable``: False for a ``bca``, ``jackknife_t``, ``bootstrap_se_t`` or ``bc`` "
            "interval but ``pit_distance``'s ``bc`` (95.0-96.7% from 20 effective documents up) (BCa covered "
            f"52-96% on the run's own documents), where there is no interval, or under {RELIABLE_DOCUMENTS:g} "
            f"effective documents or where n_documents / n_eff_documents exceeds {RELIABLE_DESIGN_EFFECT:g} "
            "(uneven lengths: a few documents hold most tokens), "
            "where no method reached 93% coverage on the run's own documents; ``ci_note`` says why. "
            "``ci_mc_error``: the Monte Carlo standard error of the interval's ends as a share of its width (the "
            "larger end's; for BCa the delta method at its adjusted levels, z0's own Monte Carlo error included), "
            "how far another draw of as many replicates would move them; never infinite. ``quantization`` (where "
            "some model is a GGUF file's): its quantization type (e.g. Q4_1; its ranks are those of the dequantized "
            "weights), empty for the other models."
        ),
    ),
]
