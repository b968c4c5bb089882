#!/bin/bash
# One image, three roles. Spark on Kubernetes starts driver and executor pods of a SparkApplication
# with the first argument `driver` or `executor` (the contract of Spark's own image entrypoint,
# resource-managers/kubernetes/docker/src/main/dockerfiles/spark/entrypoint.sh); anything else runs
# the operator: `docker run ebb-operator [--namespace NS ...]`. tini (the image's ENTRYPOINT) is PID 1.
#
# SPARK_HOME is the pyspark package: its bin/spark-submit and jars/ (spark-kubernetes included) are a
# Spark distribution's.
set -euo pipefail
SPARK_HOME=$(/opt/ebb/bin/python -c \
  'import importlib.util, os; print(os.path.dirname(importlib.util.find_spec("pyspark").origin))')
export SPARK_HOME

case "${1:-}" in
  driver)
    shift
    # Client mode inside the driver pod; spark-submit's launcher applies spark.driver.* JVM options
    # from the properties file Spark mounted.
    exec "$SPARK_HOME/bin/spark-submit" \
      --conf "spark.driver.bindAddress=${SPARK_DRIVER_BIND_ADDRESS}" \
      --conf "spark.executorEnv.SPARK_DRIVER_POD_IP=${SPARK_DRIVER_BIND_ADDRESS}" \
      --deploy-mode client "$@"
    ;;
  executor)
    shift
    # The executor's JVM options (spark.executor.extraJavaOptions, Java 17's --add-opens among them)
    # arrive as SPARK_JAVA_OPT_0..N, in order.
    mapfile -t java_opts < <(env | grep '^SPARK_JAVA_OPT_' | sort -t_ -k4 -n | sed 's/^[^=]*=//')
    exec "$JAVA_HOME/bin/java" \
      "${java_opts[@]}" \
      "-Xms${SPARK_EXECUTOR_MEMORY}" "-Xmx${SPARK_EXECUTOR_MEMORY}" \
      -cp "${SPARK_CLASSPATH:+$SPARK_CLASSPATH:}$SPARK_HOME/jars/*" \
      org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend \
      --driver-url "$SPARK_DRIVER_URL" \
      --executor-id "$SPARK_EXECUTOR_ID" \
      --cores "$SPARK_EXECUTOR_CORES" \
      --app-id "$SPARK_APPLICATION_ID" \
      --hostname "$SPARK_EXECUTOR_POD_IP" \
      --resourceProfileId "${SPARK_RESOURCE_PROFILE_ID:-0}" \
      --podName "${SPARK_EXECUTOR_POD_NAME:-}" \
      "$@"
    ;;
  *)
    exec /opt/ebb/bin/python -m ebb_operator "$@"
    ;;
esac
