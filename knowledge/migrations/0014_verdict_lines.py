from django.conf import settings
from django.db import migrations, models


# The one line there was (0.5 by default) becomes two. A KB still at the old default gets the measured gate; every
# KB's confidence line starts at the measured default, or at its own gate when that is higher.
OLD_DEFAULT = 0.5
GATE = 0.12
LINE = 0.7


def two_lines(apps, schema_editor):
    KnowledgeBase = apps.get_model("knowledge", "KnowledgeBase")
    KnowledgeBase.objects.filter(score_threshold=OLD_DEFAULT).update(score_threshold=GATE)
    for kb in KnowledgeBase.objects.all():
        line = max(LINE, kb.score_threshold)
        if kb.answer_threshold != line:
            KnowledgeBase.objects.filter(pk=kb.pk).update(answer_threshold=line)


class Migration(migrations.Migration):

    dependencies = [
        ('knowledge', '0013_kb_answer_settings'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='judgecalibration',
            name='relevances',
            field=models.JSONField(blank=True, default=dict, help_text="Each question's calibrated relevance, by class: what the outcomes at the KB's two lines are read from", verbose_name='relevances'),
        ),
        migrations.AddField(
            model_name='knowledgebase',
            name='answer_threshold',
            field=models.FloatField(default=0.7, help_text="Relevance at or above it is 'answered'; between the gate and it, 'uncertain'", verbose_name='confidence line'),
        ),
        migrations.AlterField(
            model_name='knowledgebase',
            name='score_threshold',
            field=models.FloatField(default=0.12, help_text="Relevance below it is 'not found': nothing relevant in the KB", verbose_name='not-found gate'),
        ),
        migrations.RunPython(two_lines, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name='knowledgebase',
            constraint=models.CheckConstraint(condition=models.Q(('answer_threshold__gte', models.F('score_threshold')), ('answer_threshold__lte', 1)), name='kb_answer_threshold_range'),
        ),
    ]
