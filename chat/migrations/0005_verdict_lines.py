from django.db import migrations, models


def verdicts_from_hits(apps, schema_editor):
    """Answers settled before the graded verdict: a hit was answered (it passed the one line there was), else not found."""
    Message = apps.get_model("chat", "Message")
    Message.objects.filter(role="assistant", hit=True).update(verdict="answered")
    Message.objects.filter(role="assistant", hit=False).update(verdict="not_found")


class Migration(migrations.Migration):

    dependencies = [
        ('chat', '0004_message_answer_mode_faq'),
    ]

    operations = [
        migrations.AddField(
            model_name='message',
            name='verdict',
            field=models.CharField(blank=True, choices=[('answered', 'answered'), ('uncertain', 'uncertain'), ('not_found', 'not found')], default='', help_text='answered, uncertain or not_found; blank until the answer is settled', max_length=10, verbose_name='verdict'),
        ),
        migrations.RunPython(verdicts_from_hits, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name='message',
            constraint=models.CheckConstraint(condition=models.Q(('verdict__in', ['', 'answered', 'uncertain', 'not_found'])), name='message_verdict_valid'),
        ),
    ]
