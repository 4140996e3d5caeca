"""A KB's candidate depth is an absolute number (was top_k × multiplier); new KBs get the measured defaults."""
from django.db import migrations, models
from django.db.models import Q


def to_measured_defaults(apps, schema_editor):
    """KBs still on the old shipped defaults (0.6/0.4, top_k × 3) move to the measured ones; chosen values stay."""
    KnowledgeBase = apps.get_model("knowledge", "KnowledgeBase")
    for kb in KnowledgeBase.objects.all():
        old_multiplier = kb.candidates  # still the multiplier at this point
        kb.candidates = 30 if old_multiplier == 3 else max(1, min(500, kb.top_k * old_multiplier))
        if kb.vector_weight == 0.6 and kb.keyword_weight == 0.4:
            kb.vector_weight, kb.keyword_weight = 0.5, 0.5
        kb.save(update_fields=["candidates", "vector_weight", "keyword_weight"])


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0004_chunk_question_embedding")]

    operations = [
        migrations.RemoveConstraint(model_name="knowledgebase", name="kb_candidates_positive"),
        migrations.RenameField(model_name="knowledgebase", old_name="candidate_multiplier", new_name="candidates"),
        migrations.RunPython(to_measured_defaults, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="knowledgebase", name="candidates",
            field=models.PositiveSmallIntegerField(default=30, help_text="Depth of each path (vector, keyword) before fusion"),
        ),
        migrations.AlterField(model_name="knowledgebase", name="vector_weight", field=models.FloatField(default=0.5)),
        migrations.AlterField(model_name="knowledgebase", name="keyword_weight", field=models.FloatField(default=0.5)),
        migrations.AddConstraint(
            model_name="knowledgebase",
            constraint=models.CheckConstraint(condition=Q(candidates__gte=1) & Q(candidates__lte=500), name="kb_candidates_range"),
        ),
    ]
